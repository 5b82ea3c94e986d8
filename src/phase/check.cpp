// Check: does each node still match the inventory? Runs the verification
// probes only, through the same read-only Prober as plan.
#include "gpuctl/phase.h"
#include "gpuctl/prober.h"

namespace gpuctl {
namespace {

class CheckPhase : public Phase {
 public:
  [[nodiscard]] std::string Title() const override { return "check"; }

  void Run(RunContext& context) override {
    const auto nodes = context.HealthyNodes();
    ParallelEach(nodes.size(), context.options.concurrency,
                 [&](std::size_t i) { CheckNode(context, *nodes[i]); });
  }

 private:
  static void CheckNode(RunContext& context, const Node& node) {
    Connection* connection = context.ConnectionTo(node.name);
    if (connection == nullptr) {
      return;
    }
    Prober prober(*connection, context.reporter, context.redactor, context.catalog.prelude());
    for (const std::size_t id : context.plan.ItemsOf(node.name)) {
      PlanItem& item = context.plan.items()[id];
      const Step& step = *context.catalog.Find(item.step);
      item.state = prober.Verify(step, item) ? ItemState::kSatisfied : ItemState::kNeedsChange;
      if (!connection->Alive()) {
        item.state = ItemState::kUnreachable;
        context.FailNode(node.name, "connection lost during check");
        return;
      }
      if (!item.detail.empty()) {
        item.state = ItemState::kProbeFailed;
      }
      context.reporter.ItemUpdated(item);
    }
  }
};

}  // namespace

std::unique_ptr<Phase> MakeCheckPhase() { return std::make_unique<CheckPhase>(); }

}  // namespace gpuctl
