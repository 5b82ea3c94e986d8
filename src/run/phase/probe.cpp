// Probe and check: what is true on each node, read-only by construction: these
// phases only hold a Prober, which cannot reach a step's change scripts. Probe
// runs each step's probe (plan, apply); check runs its verification (check).
// A probe that passes with a failing verification is "apply cannot fix",
// unless what it waits for is still to change (Plan::DeferVerdictsOnPendingWork).
// A node's items go in one batched command (probe_batch.h).
#include "gpuctl/run/phase.h"
#include "gpuctl/run/prober.h"

namespace gpuctl {
namespace {

class ProbePhase : public Phase {
 public:
  explicit ProbePhase(Activity activity) : activity_(activity) {}

  [[nodiscard]] std::string Title() const override {
    return activity_ == Activity::kCheck ? "check" : "probe";
  }

  void Run(RunContext& context) override {
    const auto nodes = context.HealthyNodes();
    ParallelEach(nodes.size(), context.options.concurrency,
                 [&](std::size_t i) { ProbeNode(context, *nodes[i]); });
    if (activity_ == Activity::kProbe) {
      // Only now is every node's part known: a verification that fails on
      // one node may wait for a change on another.
      for (const std::size_t id : context.plan.DeferVerdictsOnPendingWork()) {
        context.reporter.ItemUpdated(context.plan.items()[id]);
      }
    }
  }

 private:
  void ProbeNode(RunContext& context, const Node& node) const {
    Connection* connection = context.ConnectionTo(node.name);
    if (connection == nullptr) {
      return;
    }
    ScriptRunner runner = context.RunnerFor(*connection);
    Prober prober(runner, &context.inputs, InputUse::kPlan);
    std::vector<Prober::Target> targets;
    for (const std::size_t id : context.plan.ItemsOf(node.name)) {
      PlanItem& item = context.plan.items()[id];
      targets.push_back({context.catalog.Find(item.step), &item});
    }
    prober.RunAll(targets, activity_);
    for (const auto& t : targets) {
      // RunAll marks every item after a lost connection unreachable.
      if (t.item->state == ItemState::kUnreachable) {
        context.FailNode(node.name, t.item->detail);
        context.reporter.NodeFailed(node.name, t.item->detail);
        return;
      }
      context.reporter.ItemUpdated(*t.item);
    }
  }

  Activity activity_;
};

}  // namespace

std::unique_ptr<Phase> MakeProbePhase() { return std::make_unique<ProbePhase>(Activity::kProbe); }
std::unique_ptr<Phase> MakeCheckPhase() { return std::make_unique<ProbePhase>(Activity::kCheck); }

}  // namespace gpuctl
