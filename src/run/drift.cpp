#include "gpuctl/run/drift.h"

#include <fmt/format.h>

#include "gpuctl/util/utf8.h"

namespace gpuctl {
namespace {

std::string Describe(const PlanItem& item) {
  const std::string& seen = item.observed.empty() ? item.detail : item.observed;
  if (seen.empty()) {
    return ToString(item.state);
  }
  return fmt::format("{} ({})", ToString(item.state), seen.substr(0, seen.find('\n')));
}

}  // namespace

std::vector<std::string> CompareWithSaved(const Plan& saved, const Plan& now) {
  std::vector<std::string> diffs;
  for (const auto& old : saved.items()) {
    const PlanItem* cur = now.Find(old.node, old.step);
    if (cur == nullptr) {
      diffs.push_back(
          fmt::format("{} {}: in the saved plan but no longer applies", old.node, old.step));
      continue;
    }
    if (cur->digest != old.digest) {
      diffs.push_back(fmt::format("{} {}: the step or its inputs changed since the plan was saved",
                                  old.node, old.step));
      continue;
    }
    // A saved plan holds what nodes printed as valid UTF-8 (utf8.h), so
    // output that is not compares in that form, or it would always differ.
    if (cur->state != old.state || ValidUtf8(cur->observed) != ValidUtf8(old.observed)) {
      diffs.push_back(
          fmt::format("{} {}: was {}, now {}", old.node, old.step, Describe(old), Describe(*cur)));
    }
  }
  for (const auto& cur : now.items()) {
    if (saved.Find(cur.node, cur.step) == nullptr) {
      diffs.push_back(
          fmt::format("{} {}: applies now but is not in the saved plan", cur.node, cur.step));
    }
  }
  return diffs;
}

std::vector<std::string> CompareNodeOs(const std::map<std::string, std::string>& saved,
                                       const Inventory& now) {
  std::vector<std::string> diffs;
  for (const auto& node : now.nodes) {
    auto it = saved.find(node.name);
    if (it == saved.end() || node.os.IsAuto() || it->second == node.os.Name()) {
      continue;
    }
    diffs.push_back(fmt::format("{}: the plan was made for {}, the node now runs {}", node.name,
                                it->second, node.os.Name()));
  }
  return diffs;
}

}  // namespace gpuctl
