#include <gtest/gtest.h>

#include "cluster_builder.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/run/prober.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using testing::SameNode;

class ProbePhaseTest : public ::testing::Test {
 protected:
  Inventory inventory =
      MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                     MakeNode("worker2", Role::kWorker, OsFamily::kRhel)});
  Catalog catalog = Catalog::FromSteps({
      MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}),
      MakeStep("gpu.driver", {Role::kWorker}, {SameNode("os.sysctl")}),
  });
  FakeTransport transport;
  Reporter quiet;

  Plan RunPlan(RunOptions options = {}) {
    Plan plan = Plan::Build(inventory, catalog);
    RunContext context(inventory, catalog, plan, transport, quiet, options);
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase()).Add(MakeProbePhase());
    pipeline.Run(context);
    errors = context.NodeErrors();
    return plan;
  }
  std::map<std::string, std::string> errors;
};

TEST_F(ProbePhaseTest, MapsProbeExitStatusToItemState) {
  transport.When("*", "probe os.sysctl", kProbeSatisfied);
  transport.When("worker1", "probe gpu.driver", kProbeNeedsChange,
                 "driver 535 installed, want 550\n");
  transport.When("worker2", "probe gpu.driver", kProbeUnknown);
  const Plan plan = RunPlan();
  EXPECT_EQ(plan.Find("master1", "os.sysctl")->state, ItemState::kSatisfied);
  EXPECT_EQ(plan.Find("worker1", "gpu.driver")->state, ItemState::kNeedsChange);
  EXPECT_EQ(plan.Find("worker1", "gpu.driver")->observed, "driver 535 installed, want 550");
  EXPECT_EQ(plan.Find("worker2", "gpu.driver")->state, ItemState::kKnownAfterApply);
}

// A verification that fails (exit 4) is "apply cannot fix" only when
// nothing it waits for is still to change.
TEST_F(ProbePhaseTest, AFailingVerdictAfterPendingWorkIsKnownAfterApply) {
  transport.When("worker1", "probe os.sysctl", kProbeNeedsChange);
  transport.When("worker2", "probe os.sysctl", kProbeSatisfied);
  transport.When("*", "probe gpu.driver", kProbeAttention, "no GPU on the bus\n");
  const Plan plan = RunPlan();
  const PlanItem* waiting = plan.Find("worker1", "gpu.driver");
  EXPECT_EQ(waiting->state, ItemState::kKnownAfterApply);
  EXPECT_EQ(waiting->observed, "after os.sysctl on worker1: no GPU on the bus");
  EXPECT_EQ(plan.Find("worker2", "gpu.driver")->state, ItemState::kNeedsAttention);
  EXPECT_EQ(plan.Summarize().attention, 1U);
}

TEST_F(ProbePhaseTest, AnUnexpectedExitStatusIsAProbeFailureWithStderr) {
  transport.AddHandler(
      [](const std::string& node, const Command& c) -> std::optional<CommandResult> {
        if (node != "worker1" || c.script != "probe gpu.driver") return std::nullopt;
        CommandResult r;
        r.exit_status = 127;
        r.err = "sh: nvidia-smi: not found\n";
        return r;
      });
  const Plan plan = RunPlan();
  const PlanItem* item = plan.Find("worker1", "gpu.driver");
  EXPECT_EQ(item->state, ItemState::kProbeFailed);
  EXPECT_EQ(item->detail, "probe exited 127: sh: nvidia-smi: not found");
  EXPECT_EQ(plan.Summarize().errors, 1U);
}

TEST_F(ProbePhaseTest, SendsOnlyProbesNeverChanges) {
  transport.When("*", "probe", kProbeNeedsChange);
  RunPlan();
  const auto records = transport.Records();
  EXPECT_EQ(records.size(), 5U);  // 2 on each worker, 1 on the master
  for (const auto& r : records) {
    EXPECT_EQ(r.command.script.rfind("probe ", 0), 0U) << r.node << ": " << r.command.script;
  }
}

TEST_F(ProbePhaseTest, ConnectsOncePerNodeForAllItsProbes) {
  RunPlan();
  EXPECT_EQ(transport.Connects("worker1"), 1);
  // Two probes, and the verification of each (both probes passed): one verdict per step.
  EXPECT_EQ(transport.RecordsFor("worker1").size(), 4U);
}

TEST_F(ProbePhaseTest, ProbesANodeInItsDependencyOrder) {
  RunPlan();
  const auto records = transport.RecordsFor("worker2");
  ASSERT_EQ(records.size(), 4U);  // each probe passed, so its verification ran after it
  EXPECT_EQ(records[0].command.script, "probe os.sysctl");
  EXPECT_EQ(records[1].command.script, "verify os.sysctl");
  EXPECT_EQ(records[2].command.script, "probe gpu.driver");
  EXPECT_EQ(records[3].command.script, "verify gpu.driver");
}

TEST_F(ProbePhaseTest, AnUnreachableNodeFailsAloneAndOthersAreProbed) {
  transport.Unreachable("worker2", ConnectFailure::kHostKeyChanged);
  const Plan plan = RunPlan();
  EXPECT_EQ(plan.Find("worker2", "os.sysctl")->state, ItemState::kUnreachable);
  EXPECT_EQ(plan.Find("worker2", "gpu.driver")->state, ItemState::kUnreachable);
  EXPECT_EQ(plan.Find("worker1", "gpu.driver")->state, ItemState::kSatisfied);
  ASSERT_EQ(errors.count("worker2"), 1U);
  EXPECT_TRUE(transport.RecordsFor("worker2").empty());
}

TEST_F(ProbePhaseTest, ProbesRunWithTheStepsEnvironment) {
  std::vector<Step> steps = catalog.steps();
  steps[1].params = {"node_name"};
  catalog = Catalog::FromSteps(steps);
  RunPlan();
  for (const auto& r : transport.RecordsFor("worker1")) {
    if (r.command.script == "probe gpu.driver") {
      EXPECT_EQ(r.command.env.at("GPUCTL_NODE_NAME"), "worker1");
    }
  }
}

TEST_F(ProbePhaseTest, ChangeParamsReachTheItemButNotTheProbe) {
  std::vector<Step> steps = catalog.steps();
  steps[1].params = {"node_name"};
  steps[1].change_params = {"hosts"};
  catalog = Catalog::FromSteps(steps);
  const Plan plan = RunPlan();
  // The change is sent the item's whole environment (executor.cpp)...
  EXPECT_EQ(plan.Find("worker1", "gpu.driver")->env.count("GPUCTL_HOSTS"), 1U);
  // ... the probe only what it reads.
  int probes = 0;
  for (const auto& r : transport.RecordsFor("worker1")) {
    if (r.command.script == "probe gpu.driver") {
      ++probes;
      EXPECT_EQ(r.command.env.at("GPUCTL_NODE_NAME"), "worker1");
      EXPECT_EQ(r.command.env.count("GPUCTL_HOSTS"), 0U);
    }
  }
  EXPECT_EQ(probes, 1);
}

TEST_F(ProbePhaseTest, BoundedConcurrencyStillProbesEveryNode) {
  RunOptions one_at_a_time;
  one_at_a_time.concurrency = 1;
  const Plan plan = RunPlan(one_at_a_time);
  EXPECT_EQ(plan.Summarize().ok, 5U);
}

TEST(StateFromProbe, LostConnectionIsUnreachableNotAProbeFailure) {
  CommandResult lost;
  lost.exit_status = -1;
  EXPECT_EQ(StateFromProbe(lost, false), ItemState::kUnreachable);
  EXPECT_EQ(StateFromProbe(lost, true), ItemState::kProbeFailed);
}

TEST(StateFromProbe, FiveIsARefusedChangeAndSixAProbeFailure) {
  CommandResult r;
  r.exit_status = kProbeRefused;
  EXPECT_EQ(StateFromProbe(r, true), ItemState::kRefused);
  r.exit_status = 6;
  EXPECT_EQ(StateFromProbe(r, true), ItemState::kProbeFailed);
}

TEST(Tail, KeepsTheLastLines) {
  EXPECT_EQ(Tail("a\nb\nc\nd\n", 2), "c\nd");
  EXPECT_EQ(Tail("only", 3), "only");
  EXPECT_EQ(Tail("\n\n", 3), "");
}

}  // namespace
}  // namespace gpuctl
