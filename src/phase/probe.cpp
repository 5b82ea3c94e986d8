// Probe: what is already true on each node. Read-only by construction: this
// phase only holds a Prober, which cannot reach a step's change scripts.
#include "gpuctl/phase.h"
#include "gpuctl/prober.h"

namespace gpuctl {
namespace {

class ProbePhase : public Phase {
 public:
  [[nodiscard]] std::string Title() const override { return "probe"; }

  void Run(RunContext& context) override {
    const auto nodes = context.HealthyNodes();
    ParallelEach(nodes.size(), context.options.concurrency,
                 [&](std::size_t i) { ProbeNode(context, *nodes[i]); });
  }

 private:
  static void ProbeNode(RunContext& context, const Node& node) {
    Connection* connection = context.ConnectionTo(node.name);
    if (connection == nullptr) {
      return;
    }
    Prober prober(*connection, context.reporter, context.redactor, context.catalog.prelude());
    for (const std::size_t id : context.plan.ItemsOf(node.name)) {
      PlanItem& item = context.plan.items()[id];
      const Step* step = context.catalog.Find(item.step);
      if (prober.Probe(*step, item) == ItemState::kUnreachable) {
        context.FailNode(node.name, item.detail);
        context.reporter.NodeFailed(node.name, item.detail);
        MarkRestUnreachable(context, node.name, item.detail);
        return;
      }
      context.reporter.ItemUpdated(item);
    }
  }

  static void MarkRestUnreachable(RunContext& context, const std::string& node,
                                  const std::string& why) {
    for (const std::size_t id : context.plan.ItemsOf(node)) {
      PlanItem& item = context.plan.items()[id];
      if (item.state == ItemState::kUnprobed) {
        item.state = ItemState::kUnreachable;
        item.detail = why;
      }
    }
  }
};

}  // namespace

std::unique_ptr<Phase> MakeProbePhase() { return std::make_unique<ProbePhase>(); }

}  // namespace gpuctl
