// ApplyAction: one `gpuctl apply`, in two halves so the caller can show the
// plan and ask between them (k0sctl's action/apply.go is the model).
//
//   Prepare()  connect, read each node's OS, build the plan, take the node
//              locks, probe; a saved plan is compared with what the probes
//              found. Nothing on a node changes.
//   Apply()    make the plan true (the Executor), verifying each change.
//   Finish()   release the locks this run took, close the connections and
//              write the final plan beside the journal. The destructor
//              finishes a run the caller did not.
//
// Everything the run does is also written to the journal in the run
// directory; a previous run that stopped mid-step is named there first.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuctl/action/spec.h"
#include "gpuctl/run/executor.h"
#include "gpuctl/run/journal.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/run/reporter.h"
#include "gpuctl/run/run_context.h"
#include "gpuctl/transport/transport.h"
#include "gpuctl/view/plan_view.h"

namespace gpuctl {

// What apply was given: an inventory, or a saved plan and the inventory it
// was made from.
struct ApplyTarget {
  std::string path;  // as given
  std::string inventory_path;
  std::optional<SavedPlan> saved;
};

// Reads `path` as a saved plan (JSON) or names it as the inventory. Returns
// nullopt after printing why to `err` (unreadable or malformed plan).
std::optional<ApplyTarget> ReadApplyTarget(const std::string& path, std::ostream& err);

// Why `saved` cannot be applied to `spec` without contacting any node (the
// inventory file or the catalog changed since it was made), or "".
std::string SavedPlanRefusal(const ApplyTarget& target, const Spec& spec);

struct ApplySettings {
  RunOptions run;
  ApplyOptions executor;
  std::string run_dir;  // empty: DefaultRunDir(cluster)
  std::string holder;   // who holds the node locks; empty: this user, host and pid
  bool break_lock = false;
};

// $XDG_STATE_HOME/gpuctl/<cluster>/runs/<UTC time>-<pid>.
std::string DefaultRunDir(const std::string& cluster);

class ApplyAction {
 public:
  // `spec` and `transport` must outlive the action. Creates the run
  // directory and its journal (std::runtime_error if it cannot).
  ApplyAction(Spec& spec, const ApplyTarget& target, Transport& transport, Reporter& progress,
              ApplySettings settings);
  ~ApplyAction();
  ApplyAction(const ApplyAction&) = delete;
  ApplyAction& operator=(const ApplyAction&) = delete;

  struct Prepared {
    // Non-empty: the saved plan no longer describes the nodes (one line per
    // node or item that moved); Apply() must not be called.
    std::vector<std::string> drift;
    // Something to change on a node still in the run.
    bool has_changes = false;
    // Changes the preflight refused (kRefused items): Apply() must not be
    // called, since some node cannot converge as the inventory asks.
    std::size_t refused = 0;
  };
  const Prepared& Prepare();
  // Only after a Prepare() with no drift.
  void Apply();
  // Idempotent.
  void Finish();

  [[nodiscard]] const Plan& plan() const { return plan_; }
  [[nodiscard]] std::map<std::string, std::string> NodeErrors() const;
  [[nodiscard]] const std::string& run_dir() const { return run_dir_; }
  [[nodiscard]] bool applied() const { return applied_; }
  [[nodiscard]] std::size_t MaxConcurrentReboots() const { return max_reboots_; }
  // How the run ended, in the words the journal's "finish" event and `gpuctl
  // runs` use: applied, failed, incomplete (nodes left out), interrupted,
  // nothing to change, not confirmed, refused (saved plan drifted).
  [[nodiscard]] std::string Outcome() const;

 private:
  Spec& spec_;
  const ApplyTarget& target_;
  ApplySettings settings_;
  std::string run_dir_;
  std::string previous_run_;  // the newest run directory before this one, or ""
  Journal journal_;
  TeeReporter reporter_;
  Plan plan_;
  RunContext context_;
  Pipeline pipeline_;
  Prepared prepared_;
  bool prepared_once_ = false;
  bool applied_ = false;
  bool finished_ = false;
  std::size_t max_reboots_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace gpuctl
