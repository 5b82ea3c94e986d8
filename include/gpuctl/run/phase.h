// Phase: one stage of a run (connect, identify, plan, lock, probe or check,
// apply), as in k0sctl's phase/ directory: one small file each under
// src/run/phase/, so a run reads as a list. Releasing the locks and closing the
// connections are the lock and connect phases' clean-ups. The steps
// themselves stay data (the catalog).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpuctl/run/run_context.h"

namespace gpuctl {

class Phase {
 public:
  virtual ~Phase() = default;
  [[nodiscard]] virtual std::string Title() const = 0;
  virtual void Run(RunContext& context) = 0;
  // Always called, in reverse order, even after a failure or interruption.
  virtual void CleanUp(RunContext& /*context*/) {}
};

// The phases of one run, in order. An action may run them in parts (apply
// prepares, asks, then applies) and cleans up once at the end.
class Pipeline {
 public:
  Pipeline& Add(std::unique_ptr<Phase> phase);
  // Runs the phases added since the last Start, in order. If one throws,
  // the rest do not run; the ones that started are still owed CleanUp.
  void Start(RunContext& context);
  // Cleans up every phase that started, last first, each once.
  void CleanUp(RunContext& context);
  // Start, then CleanUp (also when a phase throws, which is then rethrown).
  void Run(RunContext& context);

 private:
  std::vector<std::unique_ptr<Phase>> phases_;
  std::size_t started_ = 0;  // phases_[0, started_) have started
  std::size_t cleaned_ = 0;  // phases_[0, cleaned_) have been cleaned up
};

// Opens one connection per node, in parallel; unreachable nodes are failed.
// Its clean-up, the last of any run, closes them all.
std::unique_ptr<Phase> MakeConnectPhase();
// Reads every connected node's os-release (one command each). A node whose
// OS contradicts its inventory `os`, or that runs one gpuctl does not
// support, fails like an unreachable one, the message naming both; the OS of
// every other node is recorded (RunContext::NodeOs) for the plan phase.
std::unique_ptr<Phase> MakeIdentifyPhase();
// Resolves the `os: auto` nodes of `inventory` to what identify recorded,
// then builds the context's plan from it (Plan::Build with `scope`), failed
// nodes' items unreachable. `inventory` must be the object the context reads:
// plan, apply and check build the plan only once each node's OS is known.
std::unique_ptr<Phase> MakePlanPhase(Inventory& inventory, PlanScope scope = PlanScope::kConverge);
// Runs every item's probe, nodes in parallel, each node's items in order.
std::unique_ptr<Phase> MakeProbePhase();
// Takes /var/lib/gpuctl/lock on every node (apply only); a node already locked
// by another run fails with the holder's details unless `break_lock`. CleanUp
// releases the locks this run took, and only those.
std::unique_ptr<Phase> MakeLockPhase(std::string run_id, std::string holder, bool break_lock);
// Runs every item's verification probe (check): satisfied or a mismatch.
std::unique_ptr<Phase> MakeCheckPhase();

struct ApplyOptions;
// Makes the plan true with an Executor. The action decides whether it runs
// (after showing the plan and asking); `max_concurrent_reboots`, if given,
// receives how many nodes were down at once.
std::unique_ptr<Phase> MakeApplyPhase(const ApplyOptions& options,
                                      std::size_t* max_concurrent_reboots = nullptr);

}  // namespace gpuctl
