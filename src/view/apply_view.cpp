#include "gpuctl/view/apply_view.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "gpuctl/util/terminal.h"
#include "gpuctl/util/text.h"
#include "gpuctl/view/fold.h"

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
  // Membership is asked of each node right before its change: a fresh node
  // is not in the cluster yet, a running one is drained first.
  const std::string pace =
      nodes.size() == 1 ? ""
      : batch == 0      ? "; nodes not yet in a running cluster all at once (no --batch; --batch 1 "
                          "reboots one at a time), its members drained and rebooted one at a time"
                        : fmt::format("; at most {} at a time (--batch)", batch);
  return fmt::format("\nReboots: {} node{} ({}){}.\n", nodes.size(), nodes.size() == 1 ? "" : "s",
                     names, pace);
}

std::string CancelledMessage() { return "Apply cancelled; nothing was changed.\n"; }

std::string InterruptedMessage() {
  return "Interrupted: steps in flight finished; reboots not yet started were cancelled and the "
         "rest did not start. Run apply again to continue.\n";
}

std::string RecapDuration(std::chrono::milliseconds took) { return HumanDuration(took); }

std::string RecapText(const Plan& plan, const Inventory& inventory,
                      const std::map<std::string, std::chrono::milliseconds>& node_times,
                      double seconds, const std::string& outcome, std::size_t width) {
  const auto counts_of = [&](const Node& node) {
    std::size_t ok = 0;
    std::size_t changed = 0;
    std::size_t failed = 0;
    std::size_t blocked = 0;
    std::size_t rebooted = 0;  // a node reboots at most once a run, for all its steps
    for (const std::size_t id : plan.ItemsOf(node.name)) {
      const PlanItem& item = plan.items()[id];
      switch (item.state) {
        case ItemState::kSatisfied:
        case ItemState::kNeedsAttention:
          ++ok;
          break;
        case ItemState::kApplied:
          ++changed;
          rebooted = item.reboot ? 1 : rebooted;
          break;
        case ItemState::kBlocked:
          ++blocked;
          break;
        case ItemState::kFailed:
        case ItemState::kRefused:
        case ItemState::kProbeFailed:
        case ItemState::kUnreachable:
          ++failed;
          break;
        default:
          break;
      }
    }
    // A node that failed, before the run or in it, counts its items failed.
    return fmt::format("ok={} changed={} failed={} blocked={} rebooted={}", ok, changed, failed,
                       blocked, rebooted);
  };
  NodeFolder folder;
  for (const Node& node : inventory.nodes) {
    folder.Add(node.name, counts_of(node));
  }
  std::size_t label_width = 0;
  for (const NodeGroup& group : folder.groups()) {
    label_width = std::max(label_width, group.Label().size());
  }
  std::string out = "\nRecap:\n";
  for (const NodeGroup& group : folder.groups()) {
    // How long the group's nodes worked: one figure, or the shortest and longest.
    std::chrono::milliseconds shortest = std::chrono::milliseconds::max();
    std::chrono::milliseconds longest{0};
    for (const std::string& node : group.nodes) {
      const auto it = node_times.find(node);
      const std::chrono::milliseconds took =
          it == node_times.end() ? std::chrono::milliseconds(0) : it->second;
      shortest = std::min(shortest, took);
      longest = std::max(longest, took);
    }
    const std::string took = RecapDuration(shortest) == RecapDuration(longest)
                                 ? RecapDuration(longest)
                                 : RecapDuration(shortest) + "-" + RecapDuration(longest);
    out += fmt::format("  {:<{}}  {}  {}\n", group.Label(), label_width, group.text, took);
  }
  const PlanSummary s = plan.Summarize();
  const std::string took =
      RecapDuration(std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0)));
  const std::string counts =
      fmt::format("{} changed, {} failed, {} blocked on {} node{}", s.applied, s.failed + s.errors,
                  s.blocked, s.nodes, s.nodes == 1 ? "" : "s");
  if (outcome == "applied" || outcome == "nothing to change") {
    out += fmt::format("\nApply complete in {}: {}.\n", took, counts);
  } else {
    out += fmt::format("\nApply {} after {}: {}.\n", outcome, took, counts);
  }
  return FitLines(out, width);
}

std::string JournalLine(const std::string& run_dir) {
  return "Journal: " + run_dir + "/journal.jsonl\n";
}

}  // namespace gpuctl
