#include "gpuctl/view/apply_view.h"

#include <fmt/format.h>

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

std::string JournalLine(const std::string& run_dir) {
  return "Journal: " + run_dir + "/journal.jsonl\n";
}

}  // namespace gpuctl
