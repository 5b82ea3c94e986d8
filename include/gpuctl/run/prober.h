// Prober: the read-only path to a node. It can run a step's probe and its
// verification, and nothing else: the planner and `check` are handed a Prober,
// never the change scripts, so a plan cannot modify a node by construction
// (k0sctl's per-call dry-run discipline is the failure this avoids).
#pragma once

#include <string_view>
#include <vector>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/run/redact.h"
#include "gpuctl/run/reporter.h"
#include "gpuctl/run/script_runner.h"
#include "gpuctl/run/step_inputs.h"
#include "gpuctl/transport/transport.h"

namespace gpuctl {

// Set (to "1") for the scripts apply runs one item at a time after changes
// of the same run (a re-probe, a verification), never for the batches of
// plan and check: a script may then wait, bounded, for what a change set
// going (playbooks/prelude.sh, settle_tries).
inline constexpr std::string_view kSettleVariable = "GPUCTL_SETTLE";

class Prober {
 public:
  // `inputs` (optional) supplies the values steps read from other nodes and
  // their secrets; without it those variables are simply unset.
  explicit Prober(ScriptRunner& runner, StepInputs* inputs = nullptr,
                  InputUse use = InputUse::kPlan)
      : runner_(runner), inputs_(inputs), use_(use) {}

  // Runs the step's verdict script (VerdictScript) and records the outcome in
  // `item` (state, observed, detail). Returns the new state.
  ItemState Probe(const Step& step, PlanItem& item);
  // Runs the verification probe (the probe if the step has none): true when
  // the change took effect. `item.observed`/`detail` describe what was seen.
  bool Verify(const Step& step, PlanItem& item);

  // Runs the verdict scripts of many items of this node in one command
  // (probe_batch.h), leaving each item as Probe would; `activity` (kProbe
  // for plan and apply, kCheck for check) only labels the output. Stops at a
  // lost connection: the remaining items are marked unreachable.
  struct Target {
    const Step* step;
    PlanItem* item;
  };
  void RunAll(const std::vector<Target>& targets, Activity activity);

 private:
  ItemState Run(const Step& step, PlanItem& item, const std::string& script, Activity activity);
  // The state a (redacted, reported) result gives `item`, with what it saw.
  ItemState Record(PlanItem& item, const CommandResult& result, Activity activity);
  // Adds the step's inputs and secrets to `env`; when one cannot be read,
  // records that on the item (known after apply for a probe, a mismatch for
  // a verification) and returns false.
  bool AddInputs(const Step& step, PlanItem& item, std::map<std::string, std::string>& env,
                 Activity activity);
  ScriptRunner& runner_;
  StepInputs* inputs_;
  InputUse use_;
};

// One verdict per step, the same for plan, apply and check: the probe, and
// when it passes and the step has its own verification, that too. A probe
// that passes with a failing verification exits kProbeAttention (the change
// would not help: 7 of 8 GPUs visible); otherwise the probe's status stands.
// A reboot step's verdict script starts with PendingRebootCheck: the step
// needs its change (and the reboot) again while a run that changed it but
// never rebooted (Ctrl-C, a lost node) left its id in kRebootPendingFile.
std::string VerdictScript(const Step& step);

// On the node's /run, a tmpfs every boot starts empty.
inline constexpr const char* kRebootPendingFile = "/run/gpuctl-reboot-pending";
std::string PendingRebootCheck(const std::string& step_id);
// Run after a reboot step's change succeeded, before its reboot.
std::string PendingRebootMark(const std::string& step_id);
// For the fake transport, which keeps a node's pending list as /run would:
// recognise (and take apart) the two scripts above. Step ids need no quoting
// beyond ShellQuote's plain '...'.
bool ParsePendingRebootCheck(const std::string& script, std::string& step_id, std::string& rest);
bool ParsePendingRebootMark(const std::string& script, std::string& step_id);
// For the fake transport, which answers the parts as a node's shell runs
// them: splits a verdict script (after an optional prelude, which goes with
// both parts) back into probe and verification. False if it is not one.
bool ParseVerdictScript(const std::string& script, std::string& probe, std::string& verify);
// What the node's shell prints for a verdict script whose probe passed
// (`probe`) and whose verification then gave `verify`.
CommandResult VerdictResult(const CommandResult& probe, const CommandResult& verify);

// Maps a probe's exit status to an item state; `alive` tells a lost
// connection apart from a failing probe.
ItemState StateFromProbe(const CommandResult& result, bool alive);

}  // namespace gpuctl
