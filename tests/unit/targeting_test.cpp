// --limit/--exclude on a plan: the limited nodes' items and what they wait
// for on other nodes, which is read (probed) but never changed; a run whose
// limited nodes need a change outside the limit refuses, naming node and step.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <set>
#include <utility>

#include "cluster_builder.h"
#include "converging_nodes.h"
#include "gpuctl/action/apply_action.h"
#include "gpuctl/action/read_only.h"
#include "gpuctl/action/spec.h"
#include "gpuctl/model/os_release.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using testing::OnRole;
using testing::SameNode;

class TargetingTest : public ::testing::Test {
 protected:
  TargetingTest() {
    spec.inventory =
        MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                       MakeNode("worker2", Role::kWorker)});
    spec.catalog =
        Catalog::FromSteps({MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}),
                            MakeStep("k8s.init", {Role::kMaster}, {SameNode("os.sysctl")}),
                            MakeStep("k8s.join", {Role::kWorker},
                                     {SameNode("os.sysctl"), OnRole("k8s.init", Role::kMaster)})});
    spec.inventory.path = "/srv/cluster/inventory.yaml";
    spec.inventory_digest = "digest-of-the-inventory";
    fake_nodes.Attach(transport);
    char dir[] = "/tmp/gpuctl-targeting.XXXXXX";
    runs = mkdtemp(dir);
  }
  ~TargetingTest() override { fs::remove_all(runs); }

  void MasterIsUp() {
    fake_nodes.MarkDone("master1", "os.sysctl");
    fake_nodes.MarkDone("master1", "k8s.init");
  }
  std::size_t ChangesSentTo(const std::string& node) const {
    std::size_t n = 0;
    for (const auto& r : transport.RecordsFor(node)) {
      n += r.command.script.rfind("apt change", 0) == 0 ? 1U : 0U;
    }
    return n;
  }
  std::size_t ProbesSentTo(const std::string& node) const {
    std::size_t n = 0;
    for (const auto& r : transport.RecordsFor(node)) {
      n += r.command.script.rfind("probe", 0) == 0 ? 1U : 0U;
    }
    return n;
  }
  ApplySettings Settings(const std::string& run) const {
    ApplySettings settings;
    settings.run_dir = (runs / run).string();
    settings.holder = "user=test host=here pid=1 started=2026-11-24T00:00:00Z";
    return settings;
  }

  Spec spec;
  FakeTransport transport;
  testing::ConvergingNodes fake_nodes;
  fs::path runs;
  ApplyTarget inventory_target{"inventory.yaml", "inventory.yaml", std::nullopt};
};

std::vector<std::string> Steps(const Plan& plan, const std::string& node) {
  std::vector<std::string> out;
  for (const std::size_t id : plan.ItemsOf(node)) {
    out.push_back(plan.items()[id].step);
  }
  return out;
}

TEST_F(TargetingTest, LimitPlanKeepsTheTargetsAndWhatTheyWaitForElsewhere) {
  const Plan full = Plan::Build(spec.inventory, spec.catalog);
  const Plan limited = LimitPlan(full, {"worker1"});
  EXPECT_EQ(limited.nodes(), (std::vector<std::string>{"master1", "worker1"}));
  EXPECT_EQ(Steps(limited, "worker1"), Steps(full, "worker1"));
  // The master's k8s.init and, through it, its os.sysctl; worker2 not at all.
  EXPECT_EQ(Steps(limited, "master1"), (std::vector<std::string>{"os.sysctl", "k8s.init"}));
  EXPECT_TRUE(limited.ItemsOf("worker2").empty());
  // Edges renumbered: the join waits for the master's init in the new plan.
  const PlanItem* join = limited.Find("worker1", "k8s.join");
  const PlanItem* init = limited.Find("master1", "k8s.init");
  ASSERT_NE(join, nullptr);
  ASSERT_NE(init, nullptr);
  EXPECT_NE(std::find(join->after.begin(), join->after.end(), init->id), join->after.end());
  for (const auto& item : limited.items()) {
    EXPECT_EQ(&limited.items()[item.id], &item);
  }
  EXPECT_EQ(LimitPlan(full, {}).items().size(), full.items().size());
}

TEST_F(TargetingTest, LimitedToTheMasterTheWorkersAreNotInThePlan) {
  const Plan limited = LimitPlan(Plan::Build(spec.inventory, spec.catalog), {"master1"});
  EXPECT_EQ(limited.nodes(), (std::vector<std::string>{"master1"}));
  EXPECT_EQ(limited.items().size(), 2U);
}

TEST_F(TargetingTest, ChangesOutsideTheLimitAreNamedNodeAndStep) {
  Plan plan = LimitPlan(Plan::Build(spec.inventory, spec.catalog), {"worker1"});
  for (auto& item : plan.items()) {
    item.state = ItemState::kSatisfied;
  }
  EXPECT_TRUE(ChangesOutsideLimit(plan, {"worker1"}).empty());
  EXPECT_EQ(OutsideLimitRefusal(plan, {"worker1"}), "");
  plan.Find("master1", "k8s.init")->state = ItemState::kNeedsChange;
  plan.Find("worker1", "k8s.join")->state = ItemState::kNeedsChange;  // inside: fine
  EXPECT_EQ(ChangesOutsideLimit(plan, {"worker1"}), (std::vector<std::string>{"master1 k8s.init"}));
  EXPECT_NE(OutsideLimitRefusal(plan, {"worker1"}).find("master1 k8s.init"), std::string::npos);
  EXPECT_TRUE(ChangesOutsideLimit(plan, {}).empty()) << "no limit, nothing outside it";
}

TEST_F(TargetingTest, APlanLimitedToAWorkerReadsTheMasterAndChangesNothing) {
  MasterIsUp();
  spec.targets = {"worker1"};
  Reporter quiet;
  const ReadOnlyResult result = PlanAction(spec, transport, quiet, {});
  EXPECT_TRUE(result.node_errors.empty());
  EXPECT_EQ(ProbesSentTo("master1"), 2U) << "the master's state is read";
  EXPECT_EQ(ProbesSentTo("worker2"), 0U) << "worker2 is outside and not needed";
  EXPECT_EQ(result.plan.Find("master1", "k8s.init")->state, ItemState::kSatisfied);
  EXPECT_EQ(result.plan.Find("worker1", "k8s.join")->state, ItemState::kNeedsChange);
  EXPECT_EQ(result.plan.Find("worker2", "k8s.join"), nullptr);
}

TEST_F(TargetingTest, APlanWhoseLimitNeedsTheMasterChangedSaysSoAsANodeError) {
  spec.targets = {"worker1"};
  Reporter quiet;
  const ReadOnlyResult result = PlanAction(spec, transport, quiet, {});
  ASSERT_EQ(result.node_errors.count("master1"), 1U);
  const std::string& error = result.node_errors.at("master1");
  EXPECT_NE(error.find("outside --limit"), std::string::npos) << error;
  EXPECT_NE(error.find("os.sysctl, k8s.init"), std::string::npos) << error;
  EXPECT_EQ(result.node_errors.count("worker1"), 0U);
}

TEST_F(TargetingTest, ALimitedApplyThatWouldChangeTheMasterRefusesAndChangesNothing) {
  spec.targets = {"worker1"};
  Reporter quiet;
  {
    ApplyAction action(spec, inventory_target, transport, quiet, Settings("run1"));
    const auto& prepared = action.Prepare();
    EXPECT_FALSE(prepared.has_changes) << "every item is held back";
    EXPECT_EQ(action.NodeErrors().count("master1"), 1U);
    EXPECT_GT(action.plan().Summarize().errors, 0U);
    action.Finish();
  }
  EXPECT_EQ(ChangesSentTo("master1"), 0U);
  EXPECT_EQ(ChangesSentTo("worker1"), 0U);
}

TEST_F(TargetingTest, ALimitedApplyChangesOnlyTheLimitedNodes) {
  MasterIsUp();
  spec.targets = {"worker1"};
  Reporter quiet;
  {
    ApplyAction action(spec, inventory_target, transport, quiet, Settings("run1"));
    const auto& prepared = action.Prepare();
    EXPECT_TRUE(prepared.has_changes);
    action.Apply();
    action.Finish();
    EXPECT_TRUE(action.NodeErrors().empty());
    EXPECT_EQ(action.plan().Summarize().applied, 2U);  // worker1's sysctl and join
  }
  EXPECT_EQ(ChangesSentTo("worker1"), 2U);
  EXPECT_EQ(ChangesSentTo("master1"), 0U);
  EXPECT_EQ(ChangesSentTo("worker2"), 0U);
}

TEST_F(TargetingTest, ALimitedRunContactsOnlyTheNodesItReads) {
  MasterIsUp();
  spec.targets = {"worker1"};
  spec.reach = NodesReached(spec.inventory, spec.catalog, spec.targets);
  EXPECT_EQ(spec.reach, (std::set<std::string>{"master1", "worker1"}));
  // worker2 is down: outside the limit and not needed, so not an error.
  transport.Unreachable("worker2");
  Reporter quiet;
  const ReadOnlyResult plan = PlanAction(spec, transport, quiet, {});
  EXPECT_TRUE(plan.node_errors.empty()) << plan.node_errors.begin()->second;
  {
    ApplyAction action(spec, inventory_target, transport, quiet, Settings("run1"));
    EXPECT_TRUE(action.Prepare().has_changes);
    action.Apply();
    action.Finish();
    EXPECT_TRUE(action.NodeErrors().empty());
    EXPECT_EQ(action.Outcome(), "applied");
  }
  EXPECT_EQ(ChangesSentTo("worker1"), 2U);
  EXPECT_TRUE(transport.RecordsFor("worker2").empty());

  // Without a limit the same down node is an error, as it should be.
  spec.targets.clear();
  spec.reach.clear();
  EXPECT_EQ(PlanAction(spec, transport, quiet, {}).node_errors.count("worker2"), 1U);
}

TEST_F(TargetingTest, WithAnAutoNodeTheReachCoversEitherFamily) {
  // k8s.init only for rhel here: whether the master's init is read depends
  // on the family, unknown before it is asked, so the master is contacted.
  spec.catalog = Catalog::FromSteps(
      {[] {
         Step init = MakeStep("k8s.init", {Role::kMaster});
         init.families = {OsFamily::kRhel};
         return init;
       }(),
       MakeStep("k8s.join", {Role::kWorker}, {OnRole("k8s.init", Role::kMaster)})});
  EXPECT_EQ(NodesReached(spec.inventory, spec.catalog, {"worker1"}),
            (std::set<std::string>{"worker1"}))
      << "a debian master has no init for the join to wait for";
  spec.inventory.nodes[0].os.id = "auto";
  EXPECT_EQ(NodesReached(spec.inventory, spec.catalog, {"worker1"}),
            (std::set<std::string>{"master1", "worker1"}));
  EXPECT_TRUE(NodesReached(spec.inventory, spec.catalog, {}).empty()) << "no limit: every node";
}

// The command line: --limit before or after the subcommand; a name that is
// no node stops the run before any node is contacted (the inventory's
// addresses are not reachable from here: an attempt would say so).
struct CliRun {
  int status = -1;
  std::string out;
};

CliRun Gpuctl(const std::string& args) {
  CliRun run;
  const std::string command = std::string("GPUCTL_PLAYBOOKS=") + GPUCTL_SOURCE_DIR + "/playbooks " +
                              GPUCTL_BINARY + " " + args + " 2>&1 </dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    run.out += buffer;
  }
  run.status = WEXITSTATUS(pclose(pipe));
  return run;
}

const std::string kMixed = std::string(GPUCTL_SOURCE_DIR) + "/inventories/mixed.yaml";

TEST(TargetingCli, AnUnknownNodeIsRefusedWithDidYouMeanBeforeOrAfterTheSubcommand) {
  const CliRun before = Gpuctl("--limit hed plan " + kMixed);
  const CliRun after = Gpuctl("plan " + kMixed + " --limit hed");
  EXPECT_EQ(before.status, 1) << before.out;
  EXPECT_NE(before.out.find("--limit hed: no such node"), std::string::npos) << before.out;
  EXPECT_NE(before.out.find("'head'"), std::string::npos) << before.out;
  EXPECT_NE(before.out.find("nothing was sent to any node"), std::string::npos) << before.out;
  EXPECT_EQ(after.out, before.out);
  const CliRun exclude = Gpuctl("check --exclude gpu-[1-2] " + kMixed);
  EXPECT_EQ(exclude.status, 1) << exclude.out;
  EXPECT_NE(exclude.out.find("none of its 2 names"), std::string::npos) << exclude.out;
  const CliRun apply = Gpuctl("apply --yes --limit head --exclude head " + kMixed);
  EXPECT_EQ(apply.status, 1) << apply.out;
  EXPECT_NE(apply.out.find("leave no node"), std::string::npos) << apply.out;
}

}  // namespace
}  // namespace gpuctl
