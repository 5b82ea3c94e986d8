// Phase: one stage of a run (connect, lock, probe, apply, verify, unlock), as
// in k0sctl's phase/ directory: one small file each under src/phase/, so the
// pipeline reads as a list. The steps themselves stay data (the catalog).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpuctl/run_context.h"

namespace gpuctl {

class Phase {
 public:
  virtual ~Phase() = default;
  [[nodiscard]] virtual std::string Title() const = 0;
  // Decide what the phase will do (filter nodes); runs before any phase runs.
  virtual void Prepare(RunContext& /*context*/) {}
  [[nodiscard]] virtual bool ShouldRun(const RunContext& /*context*/) const { return true; }
  virtual void Run(RunContext& context) = 0;
  // Always called, in reverse order, even after a failure or interruption.
  virtual void CleanUp(RunContext& /*context*/) {}
};

class Pipeline {
 public:
  Pipeline& Add(std::unique_ptr<Phase> phase);
  // Prepares every phase, runs each that should run, then cleans up all in
  // reverse order (also when a phase throws, which is then rethrown).
  void Run(RunContext& context);

 private:
  std::vector<std::unique_ptr<Phase>> phases_;
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
class Executor;
// Makes the plan true with an Executor, after `proceed` agrees (it shows the
// plan, compares a saved one, asks for confirmation); a `false` ends the run
// with nothing changed; `proceeded` tells the caller which way it went.
std::unique_ptr<Phase> MakeApplyPhase(const ApplyOptions& options,
                                      std::function<bool(RunContext&)> proceed, bool& proceeded,
                                      std::size_t* max_concurrent_reboots = nullptr);

}  // namespace gpuctl
