// Planning a node leaving the cluster (`state: absent`): a leaving node's
// plan is the catalog's removal steps (`state: absent`) and nothing else, a
// node that stays never gets one, the control plane's steps that forget it
// wait for its removal, and a leaving node that cannot be reached counts as
// done. Over a small playbook, and over the shipped catalog.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"

namespace gpuctl {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// worker.setup on every worker that stays; node.leave on every leaving
// worker; cluster.forget on the master once some node leaves, after each
// leaving worker's node.leave.
constexpr const char* kPlaybook = R"(steps:
  - id: worker.setup
    roles: [worker]
    probe: test -e /setup
    change: {any: touch /setup}
  - id: node.leave
    state: absent
    roles: [worker]
    probe: test ! -e /joined
    change: {any: rm -f /joined}
  - id: cluster.forget
    roles: [master]
    when: [leaving_nodes]
    depends: [{step: node.leave, on: worker}]
    params: [leaving_nodes]
    probe: test -z "$GPUCTL_LEAVING_NODES"
    change: {any: echo forget $GPUCTL_LEAVING_NODES}
)";

// m1, w1, w2 and w3, w2 leaving unless `w2_leaves` is false.
std::string InventoryText(bool w2_leaves = true) {
  return std::string(R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
  - {name: w2, address: 198.18.0.12, os: ubuntu-22.04, roles: [worker])") +
         (w2_leaves ? ", state: absent}\n" : "}\n") +
         "  - {name: w3, address: 198.18.0.13, os: ubuntu-22.04, roles: [worker]}\n";
}

Inventory ParseInv(const std::string& text) {
  Diagnostics diagnostics;
  auto inventory = ParseInventory(text, "/lab/inv.yaml", diagnostics);
  EXPECT_TRUE(inventory) << diagnostics.Format();
  return inventory ? *inventory : Inventory{};
}

Catalog ParseCatalog(const std::string& text) {
  Diagnostics diagnostics;
  auto catalog = Catalog::Parse(text, "pb.yaml", diagnostics);
  EXPECT_TRUE(catalog) << diagnostics.Format();
  return catalog ? *catalog : Catalog{};
}

std::vector<std::string> StepsOf(const Plan& plan, const std::string& node) {
  std::vector<std::string> steps;
  for (const std::size_t id : plan.ItemsOf(node)) {
    steps.push_back(plan.items()[id].step);
  }
  return steps;
}

std::set<std::string> StepSet(const Plan& plan, const std::string& node) {
  const std::vector<std::string> steps = StepsOf(plan, node);
  return {steps.begin(), steps.end()};
}

// Passes when `item` waits for `other`, both present in the plan.
::testing::AssertionResult Waits(const Plan& plan, const std::string& node, const std::string& step,
                                 const std::string& other_node, const std::string& other_step) {
  const PlanItem* item = plan.Find(node, step);
  const PlanItem* other = plan.Find(other_node, other_step);
  if (item == nullptr || other == nullptr) {
    return ::testing::AssertionFailure()
           << (item == nullptr ? step + " on " + node : other_step + " on " + other_node)
           << " is not in the plan";
  }
  if (std::find(item->after.begin(), item->after.end(), other->id) == item->after.end()) {
    return ::testing::AssertionFailure()
           << step << " on " << node << " does not wait for " << other_step << " on " << other_node;
  }
  return ::testing::AssertionSuccess();
}

TEST(PlanLeavingTest, TheCatalogReadsStateAbsent) {
  const Catalog catalog = ParseCatalog(kPlaybook);
  ASSERT_EQ(catalog.steps().size(), 3U);
  EXPECT_FALSE(catalog.Find("worker.setup")->leaving);
  EXPECT_TRUE(catalog.Find("node.leave")->leaving);
  EXPECT_FALSE(catalog.Find("cluster.forget")->leaving);
  EXPECT_EQ(catalog.Find("cluster.forget")->when,
            std::vector<StepCondition>{StepCondition::kLeavingNodes});
  EXPECT_EQ(ToString(StepCondition::kLeavingNodes), "leaving_nodes");
}

TEST(PlanLeavingTest, ALeavingNodeGetsOnlyItsRemovalSteps) {
  const Inventory inventory = ParseInv(InventoryText());
  const Plan plan = Plan::Build(inventory, ParseCatalog(kPlaybook));
  EXPECT_EQ(StepsOf(plan, "w2"), std::vector<std::string>{"node.leave"});
  EXPECT_EQ(StepsOf(plan, "w1"), std::vector<std::string>{"worker.setup"});
  EXPECT_EQ(StepsOf(plan, "w3"), std::vector<std::string>{"worker.setup"});
  EXPECT_EQ(StepsOf(plan, "m1"), std::vector<std::string>{"cluster.forget"});
  // The leaving node is still one of the plan's nodes, in inventory order.
  EXPECT_EQ(plan.nodes(), (std::vector<std::string>{"m1", "w1", "w2", "w3"}));
}

TEST(PlanLeavingTest, AppliesToSeparatesLeavingAndStayingNodes) {
  const Inventory inventory = ParseInv(InventoryText());
  const Catalog catalog = ParseCatalog(kPlaybook);
  const Step& setup = *catalog.Find("worker.setup");
  const Step& leave = *catalog.Find("node.leave");
  EXPECT_TRUE(setup.AppliesTo(*inventory.Find("w1"), inventory));
  EXPECT_FALSE(setup.AppliesTo(*inventory.Find("w2"), inventory));
  EXPECT_FALSE(leave.AppliesTo(*inventory.Find("w1"), inventory));
  EXPECT_TRUE(leave.AppliesTo(*inventory.Find("w2"), inventory));
  // Role still counts: a leaving step for workers is not the master's.
  EXPECT_FALSE(leave.AppliesTo(*inventory.Find("m1"), inventory));
}

TEST(PlanLeavingTest, TheMasterStepWaitsForTheLeavingNodesRemoval) {
  const Inventory inventory = ParseInv(InventoryText());
  const Plan plan = Plan::Build(inventory, ParseCatalog(kPlaybook));
  const PlanItem* forget = plan.Find("m1", "cluster.forget");
  const PlanItem* leave = plan.Find("w2", "node.leave");
  ASSERT_NE(forget, nullptr);
  ASSERT_NE(leave, nullptr);
  EXPECT_EQ(forget->after, std::vector<std::size_t>{leave->id});
  EXPECT_EQ(leave->before, std::vector<std::size_t>{forget->id});
  // It reads whom to forget.
  ASSERT_EQ(forget->env.count("GPUCTL_LEAVING_NODES"), 1U);
  EXPECT_EQ(forget->env.at("GPUCTL_LEAVING_NODES").str(), "w2");
}

TEST(PlanLeavingTest, NoLeavingNodeNoRemovalSteps) {
  const Inventory inventory = ParseInv(InventoryText(false));
  ASSERT_FALSE(inventory.HasLeavingNodes());
  const Plan plan = Plan::Build(inventory, ParseCatalog(kPlaybook));
  EXPECT_TRUE(StepsOf(plan, "m1").empty());
  for (const char* worker : {"w1", "w2", "w3"}) {
    EXPECT_EQ(StepsOf(plan, worker), std::vector<std::string>{"worker.setup"}) << worker;
  }
  for (const PlanItem& item : plan.items()) {
    EXPECT_NE(item.step, "node.leave") << item.node;
    EXPECT_NE(item.step, "cluster.forget") << item.node;
  }
}

TEST(PlanLeavingTest, AnUnreachableLeavingNodeIsLeftAsItIs) {
  const Inventory inventory = ParseInv(InventoryText());
  Plan plan = Plan::Build(inventory, ParseCatalog(kPlaybook));
  plan.MarkUnreachable("w2", "cannot connect: No route to host");
  plan.MarkUnreachable("w1", "cannot connect: Connection refused");
  const PlanItem& leave = *plan.Find("w2", "node.leave");
  EXPECT_EQ(leave.state, ItemState::kSatisfied);
  EXPECT_THAT(leave.observed, StartsWith("not worked on, so left as it is"));
  EXPECT_THAT(leave.observed, HasSubstr("cannot connect: No route to host"));
  // A node that stays is unreachable, as ever.
  const PlanItem& setup = *plan.Find("w1", "worker.setup");
  EXPECT_EQ(setup.state, ItemState::kUnreachable);
  EXPECT_EQ(setup.detail, "cannot connect: Connection refused");
  // Nobody else is touched.
  EXPECT_EQ(plan.Find("w3", "worker.setup")->state, ItemState::kUnprobed);
  EXPECT_EQ(plan.Find("m1", "cluster.forget")->state, ItemState::kUnprobed);
  // The summary counts the leaving node's item as ok, not as an error.
  const PlanSummary summary = plan.Summarize();
  EXPECT_EQ(summary.ok, 1U);
  EXPECT_EQ(summary.errors, 1U);
}

TEST(PlanLeavingTest, StateIsPartOfTheCatalogDigest) {
  const std::string present = std::string(kPlaybook);
  std::string absent_removed = present;
  const std::string line = "    state: absent\n";
  absent_removed.erase(absent_removed.find(line), line.size());
  EXPECT_NE(ParseCatalog(present).Digest(), ParseCatalog(absent_removed).Digest());
}

// The shipped playbooks: which removal steps a leaving worker gets, and
// what on the master waits for them.
class PlanLeavingShippedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Diagnostics diagnostics;
    auto loaded = Catalog::Load(std::string(GPUCTL_SOURCE_DIR) + "/playbooks", diagnostics);
    ASSERT_TRUE(loaded) << diagnostics.Format();
    catalog = std::move(*loaded);
  }

  // Every leaving step in the catalog, by id.
  [[nodiscard]] std::set<std::string> LeavingSteps() const {
    std::set<std::string> ids;
    for (const Step& step : catalog.steps()) {
      if (step.leaving) {
        ids.insert(step.id);
      }
    }
    return ids;
  }

  // The plan's invariants with leaving nodes: a leaving node holds only
  // leaving steps, a staying node none, and a staying node's item waits on
  // a leaving node only for a leaving step.
  static void ExpectSeparated(const Inventory& inventory, const Catalog& catalog,
                              const Plan& plan) {
    for (const PlanItem& item : plan.items()) {
      const Node& node = *inventory.Find(item.node);
      EXPECT_EQ(catalog.Find(item.step)->leaving, node.absent) << item.node << " " << item.step;
      for (const std::size_t dep : item.after) {
        const PlanItem& other = plan.items()[dep];
        if (inventory.Find(other.node)->absent) {
          EXPECT_TRUE(catalog.Find(other.step)->leaving)
              << item.node << " " << item.step << " waits for " << other.node << " " << other.step;
        }
      }
    }
  }

  Catalog catalog;
};

constexpr const char* kSlurmInventory = R"(cluster: lab
orchestrator: slurm
network: {subnet: 198.18.0.0/24}
nfs:
  server: s1
  exports: [{path: /data/shared}]
  mounts: [{export: /data/shared, path: /data/shared}]
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: w1
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
    hardware: {gpus: {model: NVIDIA A100 80GB PCIe, count: 2}}
  - name: w2
    address: 198.18.0.12
    os: rocky-9
    roles: [worker]
    hardware: {gpus: {model: NVIDIA A100 80GB PCIe, count: 2}}
    state: absent
  - {name: s1, address: 198.18.0.13, os: ubuntu-22.04, roles: [storage]}
)";

constexpr const char* kKubernetesInventory = R"(cluster: lab
orchestrator: kubernetes
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: w1
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
    hardware: {gpus: {model: NVIDIA A100 80GB PCIe, count: 2}}
  - name: w2
    address: 198.18.0.12
    os: ubuntu-22.04
    roles: [worker]
    hardware: {gpus: {model: NVIDIA A100 80GB PCIe, count: 2}}
    state: absent
)";

TEST_F(PlanLeavingShippedTest, TheShippedRemovalSteps) {
  EXPECT_EQ(LeavingSteps(), (std::set<std::string>{"k8s.leave", "nfs.leave", "slurm.leave"}));
  ASSERT_NE(catalog.Find("k8s.forget-nodes"), nullptr);
  EXPECT_FALSE(catalog.Find("k8s.forget-nodes")->leaving);
  EXPECT_THAT(catalog.Find("k8s.forget-nodes")->when, Contains(StepCondition::kLeavingNodes));
}

TEST_F(PlanLeavingShippedTest, ALeavingSlurmWorkerStopsSlurmdAndLetsGoOfNfs) {
  const Inventory inventory = ParseInv(kSlurmInventory);
  const Plan plan = Plan::Build(inventory, catalog);
  EXPECT_EQ(StepSet(plan, "w2"), (std::set<std::string>{"nfs.leave", "slurm.leave"}));
  // The worker that stays converges as ever, without a removal step.
  EXPECT_THAT(StepSet(plan, "w1"), Contains("slurm.config"));
  EXPECT_THAT(StepSet(plan, "w1"), Contains("nfs.client"));
  ExpectSeparated(inventory, catalog, plan);
  // slurm.config, without w2, is written once w2's slurmd has stopped: on
  // the controller and on the worker that stays.
  EXPECT_TRUE(Waits(plan, "m1", "slurm.config", "w2", "slurm.leave"));
  EXPECT_TRUE(Waits(plan, "w1", "slurm.config", "w2", "slurm.leave"));
  const PlanItem& config = *plan.Find("m1", "slurm.config");
  EXPECT_THAT(config.env.at("GPUCTL_SLURM_NODES").str(), Not(HasSubstr("w2")));
  // Nothing Kubernetes in a Slurm cluster.
  for (const PlanItem& item : plan.items()) {
    EXPECT_NE(item.step, "k8s.leave") << item.node;
    EXPECT_NE(item.step, "k8s.forget-nodes") << item.node;
  }
}

TEST_F(PlanLeavingShippedTest, WithoutNfsMountsASlurmWorkerOnlyStopsSlurmd) {
  std::string text = kSlurmInventory;
  const std::string mounts = "  mounts: [{export: /data/shared, path: /data/shared}]\n";
  text.erase(text.find(mounts), mounts.size());
  const Inventory inventory = ParseInv(text);
  const Plan plan = Plan::Build(inventory, catalog);
  EXPECT_EQ(StepSet(plan, "w2"), std::set<std::string>{"slurm.leave"});
  ExpectSeparated(inventory, catalog, plan);
}

TEST_F(PlanLeavingShippedTest, ALeavingKubernetesWorkerIsResetThenForgotten) {
  const Inventory inventory = ParseInv(kKubernetesInventory);
  const Plan plan = Plan::Build(inventory, catalog);
  EXPECT_EQ(StepSet(plan, "w2"), std::set<std::string>{"k8s.leave"});
  EXPECT_THAT(StepSet(plan, "w1"), Contains("k8s.join"));
  EXPECT_THAT(StepSet(plan, "w1"), Not(Contains("k8s.leave")));
  ExpectSeparated(inventory, catalog, plan);
  // The master deletes w2 from the cluster once w2 is reset.
  EXPECT_TRUE(Waits(plan, "m1", "k8s.forget-nodes", "w2", "k8s.leave"));
  const PlanItem& forget = *plan.Find("m1", "k8s.forget-nodes");
  EXPECT_EQ(forget.env.at("GPUCTL_LEAVING_NODES").str(), "w2");
  // It is the master's only step that waits on w2.
  const PlanItem& leave = *plan.Find("w2", "k8s.leave");
  EXPECT_EQ(leave.before, std::vector<std::size_t>{forget.id});
  for (const char* step : {"slurm.leave", "nfs.leave"}) {
    EXPECT_EQ(plan.Find("w2", step), nullptr) << step;
  }
}

TEST_F(PlanLeavingShippedTest, NoLeavingNodeNoForgetting) {
  std::string text = kKubernetesInventory;
  const std::string state = "    state: absent\n";
  text.erase(text.find(state), state.size());
  const Inventory inventory = ParseInv(text);
  const Plan plan = Plan::Build(inventory, catalog);
  const std::set<std::string> leaving = LeavingSteps();
  for (const PlanItem& item : plan.items()) {
    EXPECT_EQ(leaving.count(item.step), 0U) << item.node << " " << item.step;
    EXPECT_NE(item.step, "k8s.forget-nodes") << item.node;
  }
  EXPECT_THAT(StepSet(plan, "w2"), Contains("k8s.join"));
}

TEST_F(PlanLeavingShippedTest, AnUnreachableLeavingWorkerDoesNotHoldTheMasterBack) {
  const Inventory inventory = ParseInv(kKubernetesInventory);
  Plan plan = Plan::Build(inventory, catalog);
  plan.MarkUnreachable("w2", "cannot connect: No route to host");
  const PlanItem& leave = *plan.Find("w2", "k8s.leave");
  EXPECT_EQ(leave.state, ItemState::kSatisfied);
  EXPECT_THAT(leave.observed, StartsWith("not worked on, so left as it is"));
  EXPECT_EQ(plan.Summarize().errors, 0U);
}

}  // namespace
}  // namespace gpuctl
