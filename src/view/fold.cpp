#include "gpuctl/view/fold.h"

#include <fmt/format.h>

#include "gpuctl/view/node_names.h"

namespace gpuctl {

std::string NodeGroup::Label() const {
  if (nodes.size() == 1) {
    return nodes.front();
  }
  return fmt::format("{} ({} identical)", CompressNodeNames(nodes), nodes.size());
}

std::string NodeGroup::Shown() const {
  return nodes.size() == 1 ? WithoutName(text, kNodePlaceholder, nodes.front()) : text;
}

void NodeFolder::Add(const std::string& node, const std::string& text, const std::string& key) {
  std::string body = WithoutName(text, node, kNodePlaceholder);
  std::string full = WithoutName(key, node, kNodePlaceholder);
  full += '\0';
  full += body;
  auto [at, added] = index_.try_emplace(std::move(full), groups_.size());
  if (added) {
    groups_.push_back({{}, std::move(body)});
  }
  groups_[at->second].nodes.push_back(node);
}

}  // namespace gpuctl
