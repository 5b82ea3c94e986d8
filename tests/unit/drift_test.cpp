#include "gpuctl/run/drift.h"

#include <gtest/gtest.h>

#include "cluster_builder.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;

class DriftTest : public ::testing::Test {
 protected:
  Inventory inventory =
      MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker)});
  std::vector<Step> steps{MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}),
                          MakeStep("gpu.nouveau", {Role::kWorker})};
  Plan Probed() {
    Plan p = Plan::Build(inventory, Catalog::FromSteps(steps));
    for (auto& item : p.items()) item.state = ItemState::kSatisfied;
    p.Find("worker1", "gpu.nouveau")->state = ItemState::kNeedsChange;
    p.Find("worker1", "gpu.nouveau")->observed =
        "/etc/modprobe.d/blacklist-nouveau.conf is missing";
    return p;
  }
};

TEST_F(DriftTest, IdenticalProbesMeanNoDrift) {
  EXPECT_TRUE(CompareWithSaved(Probed(), Probed()).empty());
}

TEST_F(DriftTest, NamesNodeAndStepWhoseObservedStateMoved) {
  Plan now = Probed();
  now.Find("worker1", "gpu.nouveau")->state = ItemState::kSatisfied;
  now.Find("worker1", "gpu.nouveau")->observed.clear();
  const auto diffs = CompareWithSaved(Probed(), now);
  ASSERT_EQ(diffs.size(), 1U);
  EXPECT_EQ(diffs[0],
            "worker1 gpu.nouveau: was change (/etc/modprobe.d/blacklist-nouveau.conf is missing), "
            "now ok");
}

TEST_F(DriftTest, ChangedStepScriptIsDrift) {
  const Plan saved = Probed();
  steps[0].probe += "\ntrue";
  const auto diffs = CompareWithSaved(saved, Probed());
  ASSERT_EQ(diffs.size(), 2U);
  EXPECT_NE(diffs[0].find("master1 os.sysctl: the step or its inputs changed"), std::string::npos);
}

TEST_F(DriftTest, NewAndVanishedItemsAreDrift) {
  const Plan saved = Probed();
  inventory.nodes.push_back(MakeNode("worker2", Role::kWorker));
  const auto diffs = CompareWithSaved(saved, Probed());
  ASSERT_EQ(diffs.size(), 2U);
  EXPECT_EQ(diffs[0], "worker2 os.sysctl: applies now but is not in the saved plan");
}

TEST(NodeOsDrift, ANodeThatNowRunsAnotherOsIsNamed) {
  Inventory now = MakeInventory(
      {MakeNode("master1", Role::kMaster), MakeNode("worker2", Role::kWorker, OsFamily::kRhel)});
  const std::map<std::string, std::string> saved = {{"master1", "ubuntu-22.04"},
                                                    {"worker2", "rocky-9"}};
  EXPECT_TRUE(CompareNodeOs(saved, now).empty());
  now.nodes[1].os = *ParseOs("debian-12");
  EXPECT_EQ(CompareNodeOs(saved, now),
            std::vector<std::string>{
                "worker2: the plan was made for rocky-9, the node now runs debian-12"});
  // A node identified on one side only failed there, and says so itself.
  now.nodes[1].os = OsRelease::Auto();
  EXPECT_TRUE(CompareNodeOs(saved, now).empty());
  EXPECT_TRUE(CompareNodeOs({}, now).empty());
}

}  // namespace
}  // namespace gpuctl
