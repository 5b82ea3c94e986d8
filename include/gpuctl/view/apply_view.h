// ApplyView: what `gpuctl apply` says around the plan it shows (which
// RenderPlanText draws): before confirming, when there is nothing to do, and
// at the end of a run. Each function returns the whole text, newlines
// included, so the CLI only prints it.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"

namespace gpuctl {

// Why a saved plan is refused after probing: each way the nodes moved since
// it was made (drift.h), one to a line.
std::string SavedPlanMovedMessage(const std::vector<std::string>& drift);

// The question asked before changing anything; the answer follows on the line.
std::string ConfirmPrompt();

// Why apply cannot ask, when stdin is not a terminal and --yes was not given.
std::string CannotConfirmMessage();

// The plan has nothing pending: the cluster matches, or it matches on the
// reachable nodes and `failed_nodes` could not be checked.
std::string NothingToApplyMessage(std::size_t failed_nodes);

// Said when some nodes failed before apply and the others go on; empty when
// none failed.
std::string LeftOutNotice(std::size_t failed_nodes);

// Said before the confirmation: which nodes go down, and how many at once
// (`batch` 0: no limit). Empty when no node reboots.
std::string RebootNotice(const std::vector<std::string>& nodes, std::size_t batch);

// The answer to a confirmation that was not "yes".
std::string CancelledMessage();

// After Ctrl-C: what finished, what did not, and how to go on.
std::string InterruptedMessage();

// After a run, like Ansible's recap: a line per node, nodes with the same
// counts folded ("gpu[01-18] (18 identical)  ok=20 changed=5 failed=0
// blocked=0 rebooted=1  2m05s-2m12s"), the time being how long each node
// worked (`node_times`, NodeTimer; a range when folded nodes differ); then
// "Apply complete in 4m15s: ..." or how the run ended otherwise with its
// counts (`outcome` as ApplyAction::Outcome says it). Lines cut to `width`
// columns (0: never).
std::string RecapText(const Plan& plan, const Inventory& inventory,
                      const std::map<std::string, std::chrono::milliseconds>& node_times,
                      double seconds, const std::string& outcome, std::size_t width = 0);

// "0.4s", "12.0s", "2m05s", "1h02m00s".
std::string RecapDuration(std::chrono::milliseconds took);

// The last line of every run: where its journal is.
std::string JournalLine(const std::string& run_dir);

}  // namespace gpuctl
