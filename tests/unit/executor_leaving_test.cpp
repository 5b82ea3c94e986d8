// Applying to a node leaving the cluster (state: absent), over the fake
// transport: any change there disrupts it, so a member is drained before its
// first change (once) and never put back in service; a node that stays is
// drained and resumed around a disruptive change as ever; the control
// plane's step that forgets the node runs once its removal is done, or at
// once when the leaving node cannot be reached.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster_builder.h"
#include "drained_cluster.h"
#include "gpuctl/run/executor.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

using testing::DrainedCluster;
using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using testing::OnRole;

// Keeps the executor's notes per node.
class Notes : public Reporter {
 public:
  void Note(const std::string& node, const std::string& message) override {
    std::lock_guard lock(mutex_);
    notes_[node].push_back(message);
  }
  std::vector<std::string> Of(const std::string& node) {
    std::lock_guard lock(mutex_);
    return notes_[node];
  }
  bool Has(const std::string& node, const std::string& message) {
    const std::vector<std::string> mine = Of(node);
    return std::find(mine.begin(), mine.end(), message) != mine.end();
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::vector<std::string>> notes_;
};

constexpr const char* kLeftDrained = "left drained: it is leaving the cluster";

// master1; w1, which stays; w2, which leaves. Workers that stay restart
// containerd; a leaving worker unmounts its share, then leaves; the master
// forgets the leaving workers once each has left.
class ExecutorLeavingTest : public ::testing::Test {
 protected:
  Inventory inventory = MakeInventory(
      {MakeNode("master1", Role::kMaster), MakeNode("w1", Role::kWorker), Leaving("w2")});
  std::vector<Step> steps{
      Restarting("containers.containerd"),
      LeavingStep("node.unmount"),
      LeavingStep("node.leave"),
      MakeStep("cluster.forget", {Role::kMaster}, {OnRole("node.leave", Role::kWorker)}),
  };
  FakeTransport transport;
  DrainedCluster cluster{transport};
  Notes notes;
  std::map<std::string, std::string> errors;

  static Node Leaving(const std::string& name) {
    Node node = MakeNode(name, Role::kWorker);
    node.absent = true;
    return node;
  }
  static Step Restarting(const std::string& id) {
    Step step = MakeStep(id, {Role::kWorker});
    step.restarts = kRestartsContainerd;
    return step;
  }
  static Step LeavingStep(const std::string& id) {
    Step step = MakeStep(id, {Role::kWorker});
    step.leaving = true;
    return step;
  }

  Plan Apply(ApplyOptions options = {}) {
    Catalog catalog = Catalog::FromSteps(steps, {testing::TestDrain()});
    Plan plan = Plan::Build(inventory, catalog);
    RunContext context(inventory, catalog, plan, transport, notes);
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase()).Add(MakeProbePhase()).Add(MakeApplyPhase(options));
    pipeline.Run(context);
    errors = context.NodeErrors();
    return plan;
  }
};

TEST_F(ExecutorLeavingTest, TheHarnessPlansOnlyRemovalStepsForTheLeavingNode) {
  const Plan plan = Plan::Build(inventory, Catalog::FromSteps(steps, {testing::TestDrain()}));
  std::vector<std::string> on_w2;
  for (const std::size_t id : plan.ItemsOf("w2")) {
    on_w2.push_back(plan.items()[id].step);
  }
  EXPECT_EQ(on_w2, (std::vector<std::string>{"node.unmount", "node.leave"}));
}

TEST_F(ExecutorLeavingTest, ALeavingMemberIsDrainedOnceAndNeverResumed) {
  cluster.Member("w1");
  cluster.Member("w2");
  const Plan plan = Apply();
  EXPECT_TRUE(errors.empty()) << errors.begin()->second;
  // Drained on the control plane before its first change, though neither
  // step reboots or restarts anything; and not resumed after its last.
  const std::vector<std::string> expected = {"drain@master1", "change node.unmount",
                                             "verify node.unmount", "change node.leave",
                                             "verify node.leave"};
  EXPECT_EQ(cluster.EventsOf("w2"), expected);
  EXPECT_EQ(cluster.Count("w2:drain@master1"), 1U);
  EXPECT_EQ(cluster.Count("w2:resume@master1"), 0U);
  EXPECT_EQ(cluster.drained(), std::set<std::string>{"w2"});
  EXPECT_TRUE(notes.Has("w2", kLeftDrained));
  EXPECT_FALSE(notes.Has("w2", "back in service"));
  EXPECT_EQ(plan.Find("w2", "node.unmount")->state, ItemState::kApplied);
  EXPECT_EQ(plan.Find("w2", "node.leave")->state, ItemState::kApplied);
}

TEST_F(ExecutorLeavingTest, AMemberThatStaysIsStillResumed) {
  cluster.Member("w1");
  cluster.Member("w2");
  const Plan plan = Apply();
  const std::vector<std::string> expected = {"drain@master1", "change containers.containerd",
                                             "verify containers.containerd", "resume@master1"};
  EXPECT_EQ(cluster.EventsOf("w1"), expected);
  EXPECT_EQ(plan.Find("w1", "containers.containerd")->state, ItemState::kApplied);
  EXPECT_TRUE(notes.Has("w1", "back in service"));
  EXPECT_FALSE(notes.Has("w1", kLeftDrained));
}

TEST_F(ExecutorLeavingTest, AMemberThatStaysIsResumedAfterItsReboot) {
  steps[0] = MakeStep("gpu.driver", {Role::kWorker});
  steps[0].reboot = true;
  inventory.nodes.push_back(MakeNode("w3", Role::kWorker));
  for (const char* w : {"w1", "w2", "w3"}) cluster.Member(w);
  const Plan plan = Apply();
  EXPECT_TRUE(errors.empty()) << errors.begin()->second;
  for (const char* w : {"w1", "w3"}) {
    const std::vector<std::string> expected = {"drain@master1", "change gpu.driver", "reboot",
                                               "verify gpu.driver", "resume@master1"};
    EXPECT_EQ(cluster.EventsOf(w), expected) << w;
    EXPECT_EQ(plan.Find(w, "gpu.driver")->state, ItemState::kApplied) << w;
  }
  // The leaving member neither reboots nor comes back; the one out of
  // service for good does not keep the others from their turn.
  EXPECT_EQ(cluster.Count("w2:reboot"), 0U);
  EXPECT_EQ(cluster.Count("w2:resume@master1"), 0U);
  EXPECT_EQ(cluster.drained(), std::set<std::string>{"w2"});
}

TEST_F(ExecutorLeavingTest, TheMasterForgetsTheNodeOnceItHasLeft) {
  cluster.Member("w2");
  const Plan plan = Apply();
  EXPECT_EQ(plan.Find("master1", "cluster.forget")->state, ItemState::kApplied);
  const std::size_t left = cluster.IndexOf("w2:verify node.leave");
  const std::size_t forget = cluster.IndexOf("master1:change cluster.forget");
  ASSERT_LT(left, cluster.events().size());
  ASSERT_LT(forget, cluster.events().size());
  EXPECT_LT(left, forget);
}

TEST_F(ExecutorLeavingTest, ALeavingNodeThatIsNoMemberIsNotDrained) {
  const Plan plan = Apply();
  const std::vector<std::string> expected = {"change node.unmount", "verify node.unmount",
                                             "change node.leave", "verify node.leave"};
  EXPECT_EQ(cluster.EventsOf("w2"), expected);
  EXPECT_TRUE(cluster.drained().empty());
  EXPECT_FALSE(notes.Has("w2", kLeftDrained));
  EXPECT_EQ(plan.Find("master1", "cluster.forget")->state, ItemState::kApplied);
}

TEST_F(ExecutorLeavingTest, ALeavingNodeWithNothingToChangeIsNotDrained) {
  cluster.Member("w2");
  // Both removals already true (the fake cluster passes any other script).
  for (Step* step : {&steps[1], &steps[2]}) {
    step->probe = "already-true";
    step->verify = "already-true";
  }
  const Plan plan = Apply();
  EXPECT_TRUE(cluster.EventsOf("w2").empty());
  EXPECT_TRUE(cluster.drained().empty());
  EXPECT_EQ(plan.Find("w2", "node.leave")->state, ItemState::kSatisfied);
  EXPECT_EQ(plan.Find("master1", "cluster.forget")->state, ItemState::kApplied);
}

TEST_F(ExecutorLeavingTest, AFailedRemovalLeavesItDrainedAndTheMasterWaiting) {
  cluster.Member("w2");
  cluster.FailChange("w2", "node.unmount");
  const Plan plan = Apply();
  const std::vector<std::string> expected = {"drain@master1", "change node.unmount"};
  EXPECT_EQ(cluster.EventsOf("w2"), expected);
  EXPECT_EQ(cluster.drained(), std::set<std::string>{"w2"});
  EXPECT_EQ(plan.Find("w2", "node.unmount")->state, ItemState::kFailed);
  EXPECT_EQ(plan.Find("w2", "node.leave")->state, ItemState::kBlocked);
  EXPECT_EQ(plan.Find("master1", "cluster.forget")->state, ItemState::kBlocked);
  EXPECT_EQ(cluster.Count("master1:change cluster.forget"), 0U);
  EXPECT_EQ(errors.count("w2"), 1U);
}

TEST_F(ExecutorLeavingTest, AFailedDrainChangesNothingOnTheLeavingNode) {
  cluster.Member("w2");
  cluster.FailDrain("w2");
  const Plan plan = Apply();
  EXPECT_EQ(cluster.Count("w2:change node.unmount"), 0U);
  EXPECT_EQ(cluster.Count("w2:change node.leave"), 0U);
  EXPECT_EQ(plan.Find("w2", "node.unmount")->state, ItemState::kFailed);
  EXPECT_EQ(plan.Find("master1", "cluster.forget")->state, ItemState::kBlocked);
  EXPECT_EQ(errors.count("w2"), 1U);
}

TEST_F(ExecutorLeavingTest, AnUnreachableLeavingNodeDoesNotHoldTheMasterBack) {
  cluster.Member("w2");
  transport.Unreachable("w2");
  const Plan plan = Apply();
  EXPECT_TRUE(cluster.EventsOf("w2").empty());
  EXPECT_EQ(plan.Find("w2", "node.leave")->state, ItemState::kSatisfied);
  EXPECT_EQ(plan.Find("master1", "cluster.forget")->state, ItemState::kApplied);
  // The node that stays is untouched by it.
  EXPECT_EQ(plan.Find("w1", "containers.containerd")->state, ItemState::kApplied);
}

}  // namespace
}  // namespace gpuctl
