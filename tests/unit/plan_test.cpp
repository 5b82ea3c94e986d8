#include "gpuctl/model/plan.h"

#include <gtest/gtest.h>

#include "cluster_builder.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using testing::OnRole;
using testing::SameNode;

// master1 + worker1 + worker2 + storage1, and a catalog whose file order is
// deliberately not dependency order.
class PlanTest : public ::testing::Test {
 protected:
  Inventory inventory =
      MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                     MakeNode("worker2", Role::kWorker), MakeNode("storage1", Role::kStorage)});
  Catalog catalog = Catalog::FromSteps({
      MakeStep("gpu.driver", {Role::kWorker}, {SameNode("gpu.nouveau")}),
      MakeStep("gpu.nouveau", {Role::kWorker}),
      MakeStep("os.sysctl", {Role::kMaster, Role::kWorker, Role::kStorage}),
      MakeStep("k8s.init", {Role::kMaster}, {SameNode("os.sysctl")}),
      MakeStep("k8s.join", {Role::kWorker},
               {SameNode("os.sysctl"), OnRole("k8s.init", Role::kMaster)}),
  });

  // The plan with every item probed satisfied: tests change what they need.
  [[nodiscard]] Plan AllSatisfied() const {
    Plan plan = Plan::Build(inventory, catalog);
    for (auto& item : plan.items()) {
      item.state = ItemState::kSatisfied;
    }
    return plan;
  }
};

TEST_F(PlanTest, HasOneItemPerApplicableNodeAndStep) {
  const Plan plan = Plan::Build(inventory, catalog);
  EXPECT_EQ(plan.ItemsOf("master1").size(), 2U);   // os.sysctl, k8s.init
  EXPECT_EQ(plan.ItemsOf("worker1").size(), 4U);   // driver, nouveau, sysctl, join
  EXPECT_EQ(plan.ItemsOf("storage1").size(), 1U);  // os.sysctl
  EXPECT_EQ(plan.items().size(), 11U);
  EXPECT_EQ(plan.Find("storage1", "gpu.driver"), nullptr);
}

// Nodes alike share one order (a large cluster sorts each shape once), so
// what tells them apart must be part of the shape: here an `unless` that
// holds on GPU nodes only drops a same-node dependency there.
TEST(PlanOrderTest, NodesAlikeShareAnOrderAndAnUnlessTellsThemApart) {
  Node gpu1 = MakeNode("gpu1", Role::kWorker);
  gpu1.hardware.gpus.emplace();
  gpu1.hardware.gpus->count = 8;
  Node gpu2 = gpu1;
  gpu2.name = "gpu2";
  const Inventory inventory =
      MakeInventory({MakeNode("cpu1", Role::kWorker), gpu1, MakeNode("cpu2", Role::kWorker), gpu2});
  StepDependency unless_gpus = SameNode("b.first");
  unless_gpus.unless = StepCondition::kHasGpus;
  const Catalog catalog = Catalog::FromSteps({
      MakeStep("a.second", {Role::kWorker}, {unless_gpus}),
      MakeStep("b.first", {Role::kWorker}),
  });
  const Plan plan = Plan::Build(inventory, catalog);
  const auto order = [&](const std::string& node) {
    std::vector<std::string> steps;
    for (const std::size_t id : plan.ItemsOf(node)) {
      steps.push_back(plan.items()[id].step);
    }
    return steps;
  };
  const std::vector<std::string> waits{"b.first", "a.second"};
  const std::vector<std::string> catalog_order{"a.second", "b.first"};
  EXPECT_EQ(order("cpu1"), waits);
  EXPECT_EQ(order("cpu2"), waits);
  EXPECT_EQ(order("gpu1"), catalog_order);
  EXPECT_EQ(order("gpu2"), catalog_order);
  EXPECT_TRUE(plan.items()[plan.Find("gpu2", "a.second")->id].after.empty());
  EXPECT_EQ(plan.Find("cpu2", "a.second")->after,
            std::vector<std::size_t>{plan.Find("cpu2", "b.first")->id});
}

TEST_F(PlanTest, MarkUnreachableTouchesOnlyThatNodesItems) {
  Plan plan = Plan::Build(inventory, catalog);
  plan.MarkUnreachable("worker1", "cannot connect: No route to host");
  for (const auto& item : plan.items()) {
    if (item.node == "worker1") {
      EXPECT_EQ(item.state, ItemState::kUnreachable) << item.step;
      EXPECT_EQ(item.detail, "cannot connect: No route to host");
    } else {
      EXPECT_NE(item.state, ItemState::kUnreachable) << item.node << " " << item.step;
    }
  }
}

TEST_F(PlanTest, DeepValidationsOnlyInADeepCheck) {
  std::vector<Step> steps = catalog.steps();
  Step nccl = MakeStep("validate.nccl", {Role::kMaster});
  nccl.deep = true;
  nccl.change.clear();
  steps.push_back(nccl);
  const Catalog with_deep = Catalog::FromSteps(steps);
  EXPECT_EQ(Plan::Build(inventory, with_deep).Find("master1", "validate.nccl"), nullptr);
  EXPECT_EQ(Plan::Build(inventory, with_deep).items().size(),
            Plan::Build(inventory, catalog).items().size());
  const Plan deep = Plan::Build(inventory, with_deep, PlanScope::kDeepCheck);
  EXPECT_NE(deep.Find("master1", "validate.nccl"), nullptr);
  EXPECT_EQ(deep.items().size(), Plan::Build(inventory, catalog).items().size() + 1);
}

TEST_F(PlanTest, OrdersEachNodeByDependenciesThenCatalogOrder) {
  const Plan plan = Plan::Build(inventory, catalog);
  std::vector<std::string> order;
  for (auto id : plan.ItemsOf("worker1")) {
    order.push_back(plan.items()[id].step);
  }
  EXPECT_EQ(order,
            (std::vector<std::string>{"gpu.nouveau", "gpu.driver", "os.sysctl", "k8s.join"}));
}

// os.time-sync runs everywhere and waits for the master's os.firewall,
// which comes later in the catalog. On the master that dependency is its
// own: the master's walker goes through its items in plan order, so the
// firewall must come first there, or the walker waits on an item it has yet
// to reach (apply hung on a master whose firewall needed a change).
TEST(PlanOrderTest, ADependencyOnARoleTheNodeHasOrdersItLikeASameNodeOne) {
  const Inventory inventory =
      MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker)});
  const Catalog catalog = Catalog::FromSteps({
      MakeStep("os.time-sync", {Role::kMaster, Role::kWorker},
               {OnRole("os.firewall", Role::kMaster)}),
      MakeStep("os.firewall", {Role::kMaster, Role::kWorker}),
  });
  const Plan plan = Plan::Build(inventory, catalog);
  const auto order = [&](const std::string& node) {
    std::vector<std::string> steps;
    for (auto id : plan.ItemsOf(node)) {
      steps.push_back(plan.items()[id].step);
    }
    return steps;
  };
  EXPECT_EQ(order("master1"), (std::vector<std::string>{"os.firewall", "os.time-sync"}));
  // A worker waits for the master's item, not its own: catalog order stays.
  EXPECT_EQ(order("worker1"), (std::vector<std::string>{"os.time-sync", "os.firewall"}));
  const PlanItem* sync = plan.Find("master1", "os.time-sync");
  const PlanItem* firewall = plan.Find("master1", "os.firewall");
  ASSERT_NE(sync, nullptr);
  ASSERT_NE(firewall, nullptr);
  EXPECT_EQ(sync->after, (std::vector<std::size_t>{firewall->id}));
}

TEST_F(PlanTest, CrossNodeDependencyPointsAtEveryHolderOfTheRole) {
  const Plan plan = Plan::Build(inventory, catalog);
  const PlanItem* join = plan.Find("worker2", "k8s.join");
  const PlanItem* init = plan.Find("master1", "k8s.init");
  const PlanItem* sysctl = plan.Find("worker2", "os.sysctl");
  ASSERT_NE(join, nullptr);
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(join->after, (std::vector<std::size_t>{std::min(init->id, sysctl->id),
                                                   std::max(init->id, sysctl->id)}));
  // The reverse edges let apply release both joins when init finishes.
  EXPECT_EQ(init->before.size(), 2U);
}

TEST_F(PlanTest, IsDeterministic) {
  const Plan a = Plan::Build(inventory, catalog);
  const Plan b = Plan::Build(inventory, catalog);
  ASSERT_EQ(a.items().size(), b.items().size());
  for (std::size_t i = 0; i < a.items().size(); ++i) {
    EXPECT_EQ(a.items()[i].node, b.items()[i].node);
    EXPECT_EQ(a.items()[i].step, b.items()[i].step);
    EXPECT_EQ(a.items()[i].digest, b.items()[i].digest);
  }
}

TEST_F(PlanTest, DigestChangesWithTheStepScript) {
  const Plan before = Plan::Build(inventory, catalog);
  std::vector<Step> steps = catalog.steps();
  steps[0].change[OsFamily::kDebian] += " --new-flag";
  const Plan after = Plan::Build(inventory, Catalog::FromSteps(steps));
  EXPECT_NE(before.Find("worker1", "gpu.driver")->digest,
            after.Find("worker1", "gpu.driver")->digest);
  EXPECT_EQ(before.Find("worker1", "os.sysctl")->digest,
            after.Find("worker1", "os.sysctl")->digest);
}

TEST_F(PlanTest, SummaryCountsStatesAndSaysThemInOneLine) {
  Plan plan = AllSatisfied();
  plan.Find("worker1", "gpu.driver")->state = ItemState::kNeedsChange;
  plan.Find("worker2", "gpu.driver")->state = ItemState::kNeedsChange;
  plan.Find("worker2", "k8s.join")->state = ItemState::kKnownAfterApply;
  const PlanSummary s = plan.Summarize();
  EXPECT_EQ(s.to_change, 2U);
  EXPECT_EQ(s.ok, 8U);
  EXPECT_TRUE(s.Pending());
  EXPECT_EQ(s.Line(), "4 nodes: 2 to change, 8 ok, 1 known after apply");
}

// A worker joined after the master's change: its join's verification fails
// today only because of that change, so the plan cannot call it unfixable.
TEST_F(PlanTest, AVerdictWaitingOnPendingWorkIsKnownAfterApply) {
  Plan plan = AllSatisfied();
  // worker2's join waits on master1's k8s.init, which waits on master1's
  // os.sysctl: pending two edges away, on another node.
  plan.Find("master1", "os.sysctl")->state = ItemState::kNeedsChange;
  PlanItem* join = plan.Find("worker2", "k8s.join");
  join->state = ItemState::kNeedsAttention;
  join->observed = "node worker2 is not in the cluster";
  // worker1's driver waits only on worker1's nouveau step, which is done:
  // its failing verification is one apply cannot fix.
  PlanItem* driver = plan.Find("worker1", "gpu.driver");
  driver->state = ItemState::kNeedsAttention;
  driver->observed = "GPU 3 has fallen off the bus";

  const std::vector<std::size_t> moved = plan.DeferVerdictsOnPendingWork();
  ASSERT_EQ(moved, std::vector<std::size_t>{join->id});
  EXPECT_EQ(join->state, ItemState::kKnownAfterApply);
  EXPECT_EQ(join->observed, "after os.sysctl on master1: node worker2 is not in the cluster");
  EXPECT_EQ(driver->state, ItemState::kNeedsAttention);
  EXPECT_EQ(driver->observed, "GPU 3 has fallen off the bus");
  // Once nothing is pending, nothing moves.
  plan.Find("worker1", "gpu.nouveau")->state = ItemState::kKnownAfterApply;
  EXPECT_EQ(plan.DeferVerdictsOnPendingWork(), std::vector<std::size_t>{driver->id});
  EXPECT_EQ(driver->observed, "after gpu.nouveau on worker1: GPU 3 has fallen off the bus");
}

TEST_F(PlanTest, AVerdictWithNothingPendingBeforeItStaysUnfixable) {
  Plan plan = AllSatisfied();
  // Pending work after it, or beside it, does not count.
  plan.Find("master1", "k8s.init")->state = ItemState::kNeedsAttention;
  plan.Find("worker1", "k8s.join")->state = ItemState::kNeedsChange;
  plan.Find("storage1", "os.sysctl")->state = ItemState::kNeedsChange;
  EXPECT_TRUE(plan.DeferVerdictsOnPendingWork().empty());
  EXPECT_EQ(plan.Find("master1", "k8s.init")->state, ItemState::kNeedsAttention);
}

TEST_F(PlanTest, FromItemsRebuildsReverseEdgesAndIndex) {
  const Plan built = Plan::Build(inventory, catalog);
  const Plan copy = Plan::FromItems(built.nodes(), built.items());
  const PlanItem* init = copy.Find("master1", "k8s.init");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->before, built.Find("master1", "k8s.init")->before);
}

TEST(ItemState, RoundTripsThroughText) {
  for (ItemState s : {ItemState::kSatisfied, ItemState::kNeedsChange, ItemState::kKnownAfterApply,
                      ItemState::kProbeFailed, ItemState::kUnreachable, ItemState::kApplied,
                      ItemState::kFailed, ItemState::kBlocked}) {
    ItemState parsed = ItemState::kUnprobed;
    ASSERT_TRUE(ParseItemState(ToString(s), parsed)) << ToString(s);
    EXPECT_EQ(parsed, s);
  }
  ItemState unused = ItemState::kUnprobed;
  EXPECT_FALSE(ParseItemState("maybe", unused));
}

}  // namespace
}  // namespace gpuctl
