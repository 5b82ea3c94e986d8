#include "gpuctl/action/reset.h"

#include <fmt/format.h>

#include "gpuctl/model/node_range.h"

namespace gpuctl {
namespace {

// A node whose service the others use: resetting it alone would leave them
// joined to a control plane, or mounting a share, that is gone.
std::string ServesOthers(const Inventory& inventory, const Node& node) {
  if (node.Has(Role::kMaster)) {
    return "it is the master (the control plane and the Slurm controller)";
  }
  if (inventory.nfs && inventory.nfs->server == node.name) {
    return "it is the NFS server the other nodes mount";
  }
  return "";
}

class ResetScopePhase : public Phase {
 public:
  explicit ResetScopePhase(const std::set<std::string>& reset_nodes) : reset_nodes_(reset_nodes) {}
  [[nodiscard]] std::string Title() const override { return "reset scope"; }
  void Run(RunContext& context) override {
    if (reset_nodes_.empty() || reset_nodes_.size() == context.inventory.nodes.size()) {
      return;
    }
    // The context's inventory: its os: auto nodes are resolved.
    const Inventory before = WithoutResetMarks(context.inventory, reset_nodes_);
    context.plan = ResetScope(context.plan, Plan::Build(before, context.catalog), reset_nodes_);
  }

 private:
  const std::set<std::string>& reset_nodes_;
};

}  // namespace

std::unique_ptr<Phase> MakeResetScopePhase(const std::set<std::string>& reset_nodes) {
  return std::make_unique<ResetScopePhase>(reset_nodes);
}

std::string PrepareReset(Spec& spec, const std::vector<std::string>& limit,
                         const std::vector<std::string>& exclude, bool packages) {
  Inventory& inventory = spec.inventory;
  std::vector<std::string> names;
  names.reserve(inventory.nodes.size());
  for (const Node& node : inventory.nodes) {
    names.push_back(node.name);
  }
  std::set<std::string> chosen(names.begin(), names.end());
  if (!limit.empty() || !exclude.empty()) {
    std::string error;
    auto selected = SelectNodes(names, limit, exclude, error);
    if (!selected) {
      return error;
    }
    chosen = std::move(*selected);
  }
  if (chosen.size() < names.size()) {
    for (const Node& node : inventory.nodes) {
      if (chosen.count(node.name) == 0) {
        continue;
      }
      if (const std::string why = ServesOthers(inventory, node); !why.empty()) {
        return fmt::format(
            "cannot reset {} and keep the other nodes: {}; reset every node (no --limit), or "
            "leave {} out",
            node.name, why, node.name);
      }
    }
  }
  for (Node& node : inventory.nodes) {
    if (chosen.count(node.name) > 0) {
      node.absent = true;
      node.reset = true;
    }
  }
  inventory.reset_packages = packages;
  spec.reset_nodes = std::move(chosen);
  spec.targets.clear();
  spec.reach.clear();
  return "";
}

Inventory WithoutResetMarks(Inventory inventory, const std::set<std::string>& reset_nodes) {
  for (Node& node : inventory.nodes) {
    if (reset_nodes.count(node.name) > 0) {
      node.absent = false;
      node.reset = false;
    }
  }
  inventory.reset_packages = false;
  return inventory;
}

Plan ResetScope(const Plan& plan, const Plan& before, const std::set<std::string>& reset_nodes) {
  std::vector<bool> seed(plan.items().size(), false);
  for (const PlanItem& item : plan.items()) {
    if (reset_nodes.count(item.node) > 0) {
      seed[item.id] = true;
      continue;
    }
    const PlanItem* was = before.Find(item.node, item.step);
    seed[item.id] = was == nullptr || was->digest != item.digest;
  }
  return plan.KeepWithPrerequisites(seed, reset_nodes);
}

bool ResetsWholeCluster(const Spec& spec) {
  return !spec.reset_nodes.empty() && spec.reset_nodes.size() == spec.inventory.nodes.size();
}

}  // namespace gpuctl
