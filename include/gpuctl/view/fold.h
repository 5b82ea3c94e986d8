// Folding: nodes whose lines are the same once each node's own name is taken
// out of them are shown once, under "gpu[01-06,08-20] (19 identical)". plan,
// apply's recap and check fold this way; JSON stays per node.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpuctl {

// The placeholder a folded group's lines show where each node's name was.
inline constexpr const char* kNodePlaceholder = "<node>";

struct NodeGroup {
  std::vector<std::string> nodes;  // in the order they were added
  std::string text;                // the nodes' text, each node's name written <node>
  // "gpu07" alone, or "gpu[01-06,08-20] (19 identical)".
  [[nodiscard]] std::string Label() const;
  // The text as the group shows it: a lone node's own name put back.
  [[nodiscard]] std::string Shown() const;
};

// Collects one text per node and groups the nodes whose texts are equal
// (once each node's name is written <node>), wherever they stand in the
// order: groups come in the order of their first node.
class NodeFolder {
 public:
  // `key` may carry what must also match but is not shown (the OS, roles);
  // it is compared as the text is, with the node's name taken out.
  void Add(const std::string& node, const std::string& text, const std::string& key = "");
  [[nodiscard]] const std::vector<NodeGroup>& groups() const { return groups_; }

 private:
  std::vector<NodeGroup> groups_;
  std::unordered_map<std::string, std::size_t> index_;  // key + text -> group
};

}  // namespace gpuctl
