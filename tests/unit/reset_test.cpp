// `gpuctl reset` before its plan runs (action/reset.h): which nodes it takes,
// what it refuses, and that a partial reset changes on the nodes that stay
// only what the departure changes. Over the shipped catalog.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuctl/action/reset.h"
#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"

namespace gpuctl {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr const char* kResetInventory = R"(cluster: lab
orchestrator: slurm
network: {subnet: 198.18.0.0/24}
nfs: {server: s1, exports: [{path: /data}], mounts: [{export: /data, path: /data}]}
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
  - {name: w2, address: 198.18.0.12, os: rocky-9, roles: [worker]}
  - {name: s1, address: 198.18.0.13, os: ubuntu-22.04, roles: [storage]}
)";

class ResetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Diagnostics diagnostics;
    auto inventory = ParseInventory(kResetInventory, "/lab/inv.yaml", diagnostics);
    auto catalog = Catalog::Load(GPUCTL_PLAYBOOK_DIR, diagnostics);
    ASSERT_TRUE(inventory && catalog) << diagnostics.Format();
    spec.inventory = std::move(*inventory);
    spec.catalog = std::move(*catalog);
  }

  std::set<std::string> StepsOf(const Plan& plan, const std::string& node) const {
    std::set<std::string> steps;
    for (const std::size_t id : plan.ItemsOf(node)) {
      steps.insert(plan.items()[id].step);
    }
    return steps;
  }

  // The reset's plan as the apply pipeline makes it: built, then scoped.
  Plan ResetPlan() const {
    const Inventory before = WithoutResetMarks(spec.inventory, spec.reset_nodes);
    const Plan plan = Plan::Build(spec.inventory, spec.catalog);
    return ResetsWholeCluster(spec)
               ? plan
               : ResetScope(plan, Plan::Build(before, spec.catalog), spec.reset_nodes);
  }

  Spec spec;
};

TEST_F(ResetTest, EveryNodeWithoutALimitEachLeavingAndResetting) {
  ASSERT_EQ(PrepareReset(spec, {}, {}, false), "");
  EXPECT_TRUE(ResetsWholeCluster(spec));
  for (const Node& node : spec.inventory.nodes) {
    EXPECT_TRUE(node.absent && node.reset) << node.name;
  }
  EXPECT_FALSE(spec.inventory.reset_packages);
  const Plan plan = ResetPlan();
  // The controller stops slurmctld with the cluster; the clients let go of
  // the share; every node undoes gpuctl's files, holds and units; no
  // package goes without --packages.
  EXPECT_EQ(StepsOf(plan, "m1"), (std::set<std::string>{"nfs.leave", "slurm.leave", "reset.units",
                                                        "reset.holds", "reset.files"}));
  EXPECT_EQ(StepsOf(plan, "w2"), (std::set<std::string>{"nfs.leave", "slurm.leave", "reset.units",
                                                        "reset.holds", "reset.files"}));
  EXPECT_EQ(StepsOf(plan, "s1"),
            (std::set<std::string>{"reset.units", "reset.holds", "reset.files"}));
  // The server's exports go only once every client has unmounted them.
  const PlanItem* units = plan.Find("s1", "reset.units");
  ASSERT_NE(units, nullptr);
  for (const std::string client : {"m1", "w1", "w2"}) {
    const std::size_t leave = plan.Find(client, "nfs.leave")->id;
    EXPECT_THAT(units->after, Contains(leave)) << client;
  }
}

TEST_F(ResetTest, PackagesGoOnlyWhenAsked) {
  ASSERT_EQ(PrepareReset(spec, {}, {}, true), "");
  EXPECT_TRUE(spec.inventory.reset_packages);
  const Plan plan = ResetPlan();
  EXPECT_THAT(StepsOf(plan, "w1"), Contains("reset.packages"));
  EXPECT_TRUE(plan.Find("w1", "reset.files")->after.size() >= 3);
}

TEST_F(ResetTest, OneWorkerLeavesAndTheOthersChangeOnlyWhatItsDepartureChanges) {
  ASSERT_EQ(PrepareReset(spec, {"w2"}, {}, false), "");
  EXPECT_FALSE(ResetsWholeCluster(spec));
  EXPECT_EQ(spec.reset_nodes, (std::set<std::string>{"w2"}));
  EXPECT_TRUE(spec.targets.empty());  // the others are not limited
  const Plan plan = ResetPlan();
  EXPECT_EQ(StepsOf(plan, "w2"), (std::set<std::string>{"nfs.leave", "slurm.leave", "reset.units",
                                                        "reset.holds", "reset.files"}));
  // The controller rewrites slurm.conf without w2 once its slurmd stopped;
  // nothing unrelated to w2 is on the stayers' list.
  const std::set<std::string> master = StepsOf(plan, "m1");
  EXPECT_THAT(master, Contains("slurm.config"));
  EXPECT_THAT(master, Not(Contains("gpu.driver")));
  EXPECT_THAT(master, Not(Contains("os.swap")));
  EXPECT_THAT(StepsOf(plan, "w1"), Not(Contains("gpu.driver")));
  EXPECT_THAT(plan.Find("m1", "slurm.config")->env.at("GPUCTL_SLURM_NODES").str(),
              Not(HasSubstr("w2")));
}

TEST_F(ResetTest, TheMasterOrTheNfsServerGoesOnlyWithEveryNode) {
  std::string refusal = PrepareReset(spec, {"m1"}, {}, false);
  EXPECT_THAT(refusal, HasSubstr("cannot reset m1 and keep the other nodes: it is the master"));
  EXPECT_THAT(refusal, HasSubstr("reset every node (no --limit), or leave m1 out"));
  refusal = PrepareReset(spec, {}, {"w1"}, false);
  EXPECT_THAT(refusal, HasSubstr("cannot reset m1"));
  refusal = PrepareReset(spec, {"s1"}, {}, false);
  EXPECT_THAT(refusal, HasSubstr("it is the NFS server the other nodes mount"));
  // Refused before anything is marked.
  for (const Node& node : spec.inventory.nodes) {
    EXPECT_FALSE(node.absent || node.reset) << node.name;
  }
  EXPECT_THAT(PrepareReset(spec, {"nosuch"}, {}, false), Not(IsEmpty()));
}

TEST_F(ResetTest, ResetStepsNeverApplyOutsideAReset) {
  const Plan plan = Plan::Build(spec.inventory, spec.catalog);
  for (const PlanItem& item : plan.items()) {
    EXPECT_FALSE(spec.catalog.Find(item.step)->reset) << item.step << " on " << item.node;
  }
  // A node removed by state: absent leaves, but keeps gpuctl's files.
  spec.inventory.nodes[2].absent = true;
  const Plan removal = Plan::Build(spec.inventory, spec.catalog);
  EXPECT_EQ(StepsOf(removal, "w2"), (std::set<std::string>{"nfs.leave", "slurm.leave"}));
}

}  // namespace
}  // namespace gpuctl
