#include "gpuctl/view/apply_view.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "gpuctl/run/executor.h"
#include "gpuctl/view/node_names.h"

namespace gpuctl {

std::string SavedPlanMovedMessage(const std::vector<std::string>& drift) {
  std::string out = "gpuctl: refusing the saved plan: the nodes moved since it was made:\n";
  for (const auto& d : drift) {
    out += "  " + d + '\n';
  }
  return out;
}

std::string ConfirmPrompt() { return "\nApply these changes? Only 'yes' is accepted: "; }

std::string CannotConfirmMessage() {
  return "gpuctl: stdin is not a terminal, so apply cannot ask for confirmation; re-run with "
         "--yes to apply without asking\n";
}

std::string NothingToApplyMessage(std::size_t failed_nodes) {
  if (failed_nodes == 0) {
    return "\nNo changes. The cluster matches the inventory.\n";
  }
  return fmt::format(
      "\nNothing to change on the reachable nodes; {} node(s) failed (above) and were not "
      "checked.\n",
      failed_nodes);
}

std::string LeftOutNotice(std::size_t failed_nodes) {
  return failed_nodes == 0 ? "" : "\nNodes with errors above are left out; the others go on.\n";
}

std::string RebootNotice(const std::vector<std::string>& nodes, std::size_t batch) {
  if (nodes.empty()) {
    return "";
  }
  // Past a screenful of names the count says more than the list.
  constexpr std::size_t kNamed = 8;
  std::string names;
  for (std::size_t i = 0; i < nodes.size() && i < kNamed; ++i) {
    names += (i == 0 ? "" : ", ") + nodes[i];
  }
  if (nodes.size() > kNamed) {
    names += fmt::format(" and {} more", nodes.size() - kNamed);
  }
  const std::string pace = nodes.size() == 1 ? ""
                           : batch == 0
                               ? "; all at once (no --batch; --batch 1 reboots one at a time)"
                               : fmt::format("; at most {} at a time (--batch)", batch);
  return fmt::format("\nReboots: {} node{} ({}){}.\n", nodes.size(), nodes.size() == 1 ? "" : "s",
                     names, pace);
}

std::string CancelledMessage() { return "Apply cancelled; nothing was changed.\n"; }

std::string InterruptedMessage() {
  return "Interrupted: steps in flight finished; reboots not yet started were cancelled and the "
         "rest did not start. Run apply again to continue.\n";
}

std::string RecapText(const Plan& plan, const Inventory& inventory,
                      const std::map<std::string, std::string>& node_errors, double seconds,
                      const std::string& outcome) {
  const auto line_of = [&](const Node& node) {
    std::size_t ok = 0;
    std::size_t changed = 0;
    std::size_t failed = 0;
    std::size_t blocked = 0;
    bool rebooted = false;
    for (const std::size_t id : plan.ItemsOf(node.name)) {
      const PlanItem& item = plan.items()[id];
      switch (item.state) {
        case ItemState::kSatisfied:
        case ItemState::kNeedsAttention:
          ++ok;
          break;
        case ItemState::kApplied:
          ++changed;
          rebooted = rebooted || item.reboot;
          break;
        case ItemState::kBlocked:
          ++blocked;
          break;
        case ItemState::kFailed:
        case ItemState::kProbeFailed:
        case ItemState::kUnreachable:
          ++failed;
          break;
        default:
          break;
      }
    }
    std::string line =
        fmt::format("ok={} changed={} failed={} blocked={}", ok, changed, failed, blocked);
    if (rebooted) {
      line += " rebooted";
    }
    if (node_errors.count(node.name) > 0) {
      line += " (left out)";
    }
    return line;
  };
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // line -> nodes
  for (const Node& node : inventory.nodes) {
    std::string line = line_of(node);
    if (groups.empty() || groups.back().first != line) {
      groups.push_back({std::move(line), {}});
    }
    groups.back().second.push_back(node.name);
  }
  std::size_t width = 0;
  std::vector<std::string> names;
  for (const auto& [line, nodes] : groups) {
    names.push_back(nodes.size() == 1
                        ? nodes.front()
                        : fmt::format("{} ({} identical)", CompressNodeNames(nodes), nodes.size()));
    width = std::max(width, names.back().size());
  }
  std::string out = "\nRecap:\n";
  for (std::size_t i = 0; i < groups.size(); ++i) {
    out += fmt::format("  {:<{}}  {}\n", names[i], width, groups[i].first);
  }
  const PlanSummary s = plan.Summarize();
  const std::string took = seconds < 10
                               ? fmt::format("{:.1f}s", seconds)
                               : Duration(std::chrono::seconds(static_cast<long>(seconds + 0.5)));
  const std::string counts = fmt::format("{} changed, {} failed, {} blocked on {} nodes", s.applied,
                                         s.failed + s.errors, s.blocked, s.nodes);
  if (outcome == "applied" || outcome == "nothing to change") {
    out += fmt::format("\nApply complete in {}: {}.\n", took, counts);
  } else {
    out += fmt::format("\nApply {} after {}: {}.\n", outcome, took, counts);
  }
  return out;
}

std::string JournalLine(const std::string& run_dir) {
  return "Journal: " + run_dir + "/journal.jsonl\n";
}

}  // namespace gpuctl
