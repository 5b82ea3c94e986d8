// Draining members of a running cluster around disruptive changes: the
// executor with a Drain in its catalog, over the fake transport. The fake
// cluster below records, in order, every drain, change, verification, reboot
// and resume, and how many nodes were drained at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>

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

class DrainTest : public ::testing::Test {
 protected:
  Inventory inventory = MakeInventory(
      {MakeNode("master1", Role::kMaster), MakeNode("w1", Role::kWorker),
       MakeNode("w2", Role::kWorker, OsFamily::kRhel), MakeNode("w3", Role::kWorker)});
  std::vector<Step> steps{MakeStep("containers.containerd", {Role::kWorker})};
  FakeTransport transport;
  DrainedCluster cluster{transport};
  Reporter quiet;
  std::map<std::string, std::string> errors;
  std::size_t max_reboots = 0;

  void SetUp() override { steps[0].restarts = kRestartsContainerd; }

  Plan Apply(ApplyOptions options = {}) {
    Catalog catalog = Catalog::FromSteps(steps, {testing::TestDrain()});
    Plan plan = Plan::Build(inventory, catalog);
    RunContext context(inventory, catalog, plan, transport, quiet);
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase())
        .Add(MakeProbePhase())
        .Add(MakeApplyPhase(options, &max_reboots));
    pipeline.Run(context);
    errors = context.NodeErrors();
    return plan;
  }
};

TEST_F(DrainTest, AMemberIsDrainedBeforeTheChangeAndResumedOnceVerified) {
  cluster.Member("w1");
  const Plan plan = Apply();
  EXPECT_TRUE(errors.empty());
  // The drain and the resume run on the control plane, the change on w1.
  const std::vector<std::string> expected = {"drain@master1", "change containers.containerd",
                                             "verify containers.containerd", "resume@master1"};
  EXPECT_EQ(cluster.EventsOf("w1"), expected);
  EXPECT_EQ(plan.Find("w1", "containers.containerd")->state, ItemState::kApplied);
  EXPECT_TRUE(cluster.drained().empty());
}

TEST_F(DrainTest, ANodeNotYetInTheClusterIsNotDrained) {
  cluster.Member("w1");
  Apply();
  const std::vector<std::string> expected = {"change containers.containerd",
                                             "verify containers.containerd"};
  EXPECT_EQ(cluster.EventsOf("w2"), expected);
  EXPECT_EQ(cluster.EventsOf("w3"), expected);
}

TEST_F(DrainTest, AStepThatDisruptsNothingNeverAsks) {
  steps[0].restarts = kRestartsNothing;
  cluster.Member("w1");
  Apply();
  for (const auto& r : transport.Records()) {
    EXPECT_NE(r.command.script, "member-check") << r.node;
  }
}

TEST_F(DrainTest, MembersRebootOneAtATimeByDefault) {
  steps = {MakeStep("gpu.driver", {Role::kWorker})};
  steps[0].reboot = true;
  for (const char* w : {"w1", "w2", "w3"}) cluster.Member(w);
  const Plan plan = Apply();
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(cluster.max_drained(), 1U);
  EXPECT_EQ(max_reboots, 1U);
  for (const char* w : {"w1", "w2", "w3"}) {
    const std::vector<std::string> expected = {"drain@master1", "change gpu.driver", "reboot",
                                               "verify gpu.driver", "resume@master1"};
    EXPECT_EQ(cluster.EventsOf(w), expected) << w;
    EXPECT_EQ(plan.Find(w, "gpu.driver")->state, ItemState::kApplied);
  }
}

TEST_F(DrainTest, BatchSetsHowManyMembersAreOutAtOnce) {
  steps = {MakeStep("gpu.driver", {Role::kWorker})};
  steps[0].reboot = true;
  for (const char* w : {"w1", "w2", "w3"}) cluster.Member(w);
  ApplyOptions options;
  options.batch = 2;
  options.members_out = 2;
  Apply(options);
  EXPECT_TRUE(errors.empty());
  EXPECT_GE(cluster.max_drained(), 1U);
  EXPECT_LE(cluster.max_drained(), 2U);
}

TEST_F(DrainTest, AFailedDrainChangesNothingAndPutsTheNodeBack) {
  cluster.Member("w1");
  cluster.Member("w2");
  cluster.FailDrain("w1");
  const Plan plan = Apply();
  const std::vector<std::string> expected = {"drain@master1", "resume@master1"};
  EXPECT_EQ(cluster.EventsOf("w1"), expected);
  const PlanItem& item = *plan.Find("w1", "containers.containerd");
  EXPECT_EQ(item.state, ItemState::kFailed);
  EXPECT_NE(item.detail.find("not drained"), std::string::npos) << item.detail;
  EXPECT_NE(item.detail.find("disruption budget"), std::string::npos) << item.detail;
  EXPECT_NE(item.detail.find("back in service"), std::string::npos) << item.detail;
  ASSERT_EQ(errors.count("w1"), 1U);
  // The other member goes on.
  EXPECT_EQ(plan.Find("w2", "containers.containerd")->state, ItemState::kApplied);
}

TEST_F(DrainTest, ANodeThatFailsWhileDrainedStaysDrained) {
  cluster.Member("w1");
  cluster.FailChange("w1");
  Apply();
  const std::vector<std::string> expected = {"drain@master1", "change containers.containerd"};
  EXPECT_EQ(cluster.EventsOf("w1"), expected);
  EXPECT_EQ(cluster.drained(), std::set<std::string>{"w1"});
  EXPECT_EQ(errors.count("w1"), 1U);
}

TEST_F(DrainTest, WhenMembershipCannotBeToldNothingChanges) {
  cluster.MemberAnswers("w1", 2);
  const Plan plan = Apply();
  EXPECT_TRUE(cluster.EventsOf("w1").empty());
  const PlanItem& item = *plan.Find("w1", "containers.containerd");
  EXPECT_EQ(item.state, ItemState::kFailed);
  EXPECT_NE(item.detail.find("cannot tell whether w1 is a cluster member"), std::string::npos)
      << item.detail;
}

TEST_F(DrainTest, NoDrainDisruptsMembersWithoutAsking) {
  cluster.Member("w1");
  ApplyOptions options;
  options.drain = false;
  Apply(options);
  const std::vector<std::string> expected = {"change containers.containerd",
                                             "verify containers.containerd"};
  EXPECT_EQ(cluster.EventsOf("w1"), expected);
}

TEST_F(DrainTest, WithNoNodeToRunTheDrainOnNothingIsAsked) {
  inventory = MakeInventory({MakeNode("w1", Role::kWorker)});
  cluster.Member("w1");
  Apply();
  const std::vector<std::string> expected = {"change containers.containerd",
                                             "verify containers.containerd"};
  EXPECT_EQ(cluster.EventsOf("w1"), expected);
}

}  // namespace
}  // namespace gpuctl
