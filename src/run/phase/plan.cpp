// Plan: the DAG of (node, step) items, built once connect and identify know
// what each node runs, so an `os: auto` node gets its own family's steps.
#include <stdexcept>

#include "gpuctl/run/phase.h"

namespace gpuctl {
namespace {

class PlanPhase : public Phase {
 public:
  PlanPhase(Inventory& inventory, PlanScope scope) : inventory_(inventory), scope_(scope) {}

  [[nodiscard]] std::string Title() const override { return "plan"; }

  void Run(RunContext& context) override {
    if (&inventory_ != &context.inventory) {
      throw std::logic_error("the plan phase must resolve the inventory the run reads");
    }
    const auto reported = context.NodeOs();
    const auto host_keys = context.NodeHostKeys();
    for (Node& node : inventory_.nodes) {
      if (auto it = reported.find(node.name); node.os.IsAuto() && it != reported.end()) {
        node.os = it->second;
      }
      if (auto it = host_keys.find(node.name); it != host_keys.end()) {
        node.host_key = it->second;
      }
    }
    context.plan = Plan::Build(inventory_, context.catalog, scope_);
    for (const auto& [node, error] : context.NodeErrors()) {
      context.plan.MarkUnreachable(node, error);
    }
  }

 private:
  Inventory& inventory_;
  PlanScope scope_;
};

}  // namespace

std::unique_ptr<Phase> MakePlanPhase(Inventory& inventory, PlanScope scope) {
  return std::make_unique<PlanPhase>(inventory, scope);
}

}  // namespace gpuctl
