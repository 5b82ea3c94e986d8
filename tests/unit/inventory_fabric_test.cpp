// fabric.subnet_manager and its standby: read and checked where written; the
// subnet_manager condition, OpenSM's priority parameter, and in the shipped
// catalog the order they give: every IB node's ib.ofed after the subnet
// managers' OpenSM, except on those nodes, whose OpenSM needs their OFED.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/params.h"
#include "gpuctl/model/plan.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::ParseText;

// Three IB workers and a storage node with a port (lines 4.. are nodes; the
// fabric block, when given, comes last, its first key on line 26).
std::string FabricInventory(const std::string& fabric) {
  std::string text = R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: w1
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
    hardware: {ib: [{device: mlx5_0, port: 1, rate: 200}]}
  - name: w2
    address: 198.18.0.12
    os: rocky-9
    roles: [worker]
    hardware: {ib: [{device: mlx5_0, port: 1, rate: 200}]}
  - name: w3
    address: 198.18.0.13
    os: ubuntu-22.04
    roles: [worker]
    hardware: {ib: [{device: mlx5_0, port: 1, rate: 200}]}
  - name: s1
    address: 198.18.0.14
    os: ubuntu-22.04
    roles: [storage]
    hardware: {ib: [{device: mlx5_0, port: 1, rate: 200}]}
  - {name: c1, address: 198.18.0.15, os: ubuntu-22.04, roles: [worker]}
)";
  return fabric.empty() ? text : text + "fabric:\n" + fabric;
}

TEST(InventoryFabric, ReadsTheSubnetManagerAndItsStandby) {
  auto p = ParseText(FabricInventory("  subnet_manager: w1\n  subnet_manager_standby: w2\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  EXPECT_EQ(inv.fabric.subnet_manager, "w1");
  EXPECT_EQ(inv.fabric.subnet_manager_standby, "w2");
  EXPECT_EQ(inv.SubnetManagerPriority(*inv.Find("w1")), kSubnetManagerPriority);
  EXPECT_EQ(inv.SubnetManagerPriority(*inv.Find("w2")), kStandbySubnetManagerPriority);
  EXPECT_EQ(inv.SubnetManagerPriority(*inv.Find("w3")), 0);
  EXPECT_TRUE(ConditionHolds(StepCondition::kSubnetManager, *inv.Find("w2"), inv));
  EXPECT_FALSE(ConditionHolds(StepCondition::kSubnetManager, *inv.Find("w3"), inv));

  const ParameterTable table(inv);
  const StepEnv w1 =
      table.For(*inv.Find("w1")).Environment({"subnet_manager_priority", "subnet_managers"});
  EXPECT_EQ(std::string(w1.at("GPUCTL_SUBNET_MANAGER_PRIORITY")), "15");
  EXPECT_EQ(std::string(w1.at("GPUCTL_SUBNET_MANAGERS")), "w1 w2");
  const StepEnv w3 = table.For(*inv.Find("w3")).Environment({"subnet_manager_priority"});
  EXPECT_EQ(std::string(w3.at("GPUCTL_SUBNET_MANAGER_PRIORITY")), "");
}

TEST(InventoryFabric, WithoutTheBlockTheSwitchesManageTheFabric) {
  auto p = ParseText(FabricInventory(""));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  for (const Node& node : p.inventory->nodes) {
    EXPECT_EQ(p.inventory->SubnetManagerPriority(node), 0) << node.name;
  }
  const StepEnv env =
      ParameterTable(*p.inventory).For(p.inventory->nodes[1]).Environment({"subnet_managers"});
  EXPECT_EQ(std::string(env.at("GPUCTL_SUBNET_MANAGERS")), "");
}

TEST(InventoryFabric, RefusesNamesThatCannotRunOpenSm) {
  struct Case {
    std::string fabric;
    int column;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"  subnet_manager: w9\n", 19, "fabric.subnet_manager 'w9' is not a node (did you mean"},
      {"  subnet_manager: c1\n", 19, "fabric.subnet_manager 'c1' has no IB ports"},
      {"  subnet_manager: s1\n", 19, "fabric.subnet_manager 's1' is neither master nor worker"},
      {"  subnet_manager: 'w1;reboot'\n", 19, "invalid fabric.subnet_manager 'w1;reboot'"},
      {"  subnet_manager_standby: w2\n", 27,
       "fabric.subnet_manager_standby needs fabric.subnet_manager"},
  };
  for (const auto& c : cases) {
    auto p = ParseText(FabricInventory(c.fabric));
    EXPECT_FALSE(p.inventory) << c.fabric;
    EXPECT_TRUE(HasDiagnostic(p.diagnostics, 26, c.column, c.message)) << p.diagnostics.Format();
  }
  auto same = ParseText(FabricInventory("  subnet_manager: w1\n  subnet_manager_standby: w1\n"));
  EXPECT_FALSE(same.inventory);
  EXPECT_TRUE(HasDiagnostic(same.diagnostics, 27, 27,
                            "fabric.subnet_manager_standby 'w1' is the subnet manager itself"))
      << same.diagnostics.Format();
}

TEST(InventoryFabric, RefusesALeavingSubnetManager) {
  std::string text = FabricInventory("  subnet_manager: w1\n");
  text.replace(text.find("roles: [worker]\n    hardware"), 15,
               "roles: [worker]\n    state: absent");
  auto p = ParseText(text);
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 27, 19, "has state absent")) << p.diagnostics.Format();
}

class FabricPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Diagnostics diagnostics;
    auto loaded = Catalog::Load(std::string(GPUCTL_SOURCE_DIR) + "/playbooks", diagnostics);
    ASSERT_TRUE(loaded) << diagnostics.Format();
    catalog_ = std::move(*loaded);
    auto p = ParseText(FabricInventory("  subnet_manager: w1\n  subnet_manager_standby: w2\n"));
    ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
    inventory_ = std::move(*p.inventory);
    plan_ = Plan::Build(inventory_, catalog_);
  }

  // The (node, step) items `node`'s `step` waits for.
  std::set<std::pair<std::string, std::string>> After(const std::string& node,
                                                      const std::string& step) const {
    std::set<std::pair<std::string, std::string>> out;
    const PlanItem* item = plan_.Find(node, step);
    if (item == nullptr) {
      ADD_FAILURE() << "no " << step << " on " << node;
      return out;
    }
    for (std::size_t id : item->after) {
      out.emplace(plan_.items()[id].node, plan_.items()[id].step);
    }
    return out;
  }

  // The plan for FabricInventory(fabric) with eight GPUs on w2 as well.
  Plan PlanWithGpusOnW2(const std::string& fabric) const {
    std::string text = FabricInventory(fabric);
    text.replace(text.find("hardware: {ib: [{device: mlx5_0, port: 1, rate: 200}]}\n  - name: w3"),
                 54,
                 "hardware: {gpus: {model: H100, count: 8}, ib: [{device: mlx5_0, port: 1, rate: "
                 "200}]}");
    auto p = ParseText(text);
    EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
    return p.inventory ? Plan::Build(*p.inventory, catalog_) : Plan();
  }

  Catalog catalog_;
  Inventory inventory_;
  Plan plan_;
};

TEST_F(FabricPlanTest, OpenSmRunsOnlyOnTheSubnetManagers) {
  EXPECT_NE(plan_.Find("w1", "ib.subnet-manager"), nullptr);
  EXPECT_NE(plan_.Find("w2", "ib.subnet-manager"), nullptr);
  EXPECT_EQ(plan_.Find("w3", "ib.subnet-manager"), nullptr);
  EXPECT_EQ(plan_.Find("m1", "ib.subnet-manager"), nullptr);
}

TEST_F(FabricPlanTest, OtherNodesOfedWaitsForEverySubnetManager) {
  const auto after = After("w3", "ib.ofed");
  EXPECT_EQ(after.count({"w1", "ib.subnet-manager"}), 1U);
  EXPECT_EQ(after.count({"w2", "ib.subnet-manager"}), 1U);
}

TEST_F(FabricPlanTest, ASubnetManagersOwnOfedComesFirst) {
  for (const char* sm : {"w1", "w2"}) {
    const auto ofed = After(sm, "ib.ofed");
    EXPECT_TRUE(std::none_of(ofed.begin(), ofed.end(), [](const auto& i) {
      return i.second == "ib.subnet-manager";
    })) << sm;
    EXPECT_EQ(After(sm, "ib.subnet-manager").count({sm, "ib.ofed"}), 1U) << sm;
  }
}

// GPUDirect RDMA: on a node with GPUs and IB, OFED comes before the driver,
// whose DKMS build of nvidia-peermem needs OFED's symbols, and peermem is
// loaded after both.
TEST_F(FabricPlanTest, OfedComesBeforeTheDriverAndPeermemAfterBoth) {
  const Plan plan = PlanWithGpusOnW2("  subnet_manager: w1\n");
  const PlanItem* driver = plan.Find("w2", "gpu.driver");
  const PlanItem* ofed = plan.Find("w2", "ib.ofed");
  const PlanItem* peermem = plan.Find("w2", "gpu.peermem");
  ASSERT_NE(driver, nullptr);
  ASSERT_NE(ofed, nullptr);
  ASSERT_NE(peermem, nullptr);
  auto waits = [](const PlanItem* item, const PlanItem* on) {
    return std::count(item->after.begin(), item->after.end(), on->id) == 1;
  };
  EXPECT_TRUE(waits(driver, ofed));
  EXPECT_TRUE(waits(peermem, driver));
  EXPECT_TRUE(waits(peermem, ofed));
  EXPECT_LT(ofed->id, driver->id) << "the node's items run in this order";
  // Blacklisting nouveau and the driver, both followed by a reboot, stay next
  // to each other, so the node reboots once for both.
  const PlanItem* nouveau = plan.Find("w2", "gpu.nouveau-blacklist");
  ASSERT_NE(nouveau, nullptr);
  EXPECT_LT(ofed->id, nouveau->id);
  const auto& items = plan.ItemsOf("w2");
  const auto at = std::find(items.begin(), items.end(), nouveau->id);
  ASSERT_NE(at, items.end());
  ASSERT_NE(at + 1, items.end());
  EXPECT_EQ(*(at + 1), driver->id);
  // Not without IB.
  EXPECT_EQ(plan.Find("c1", "gpu.peermem"), nullptr);
}

// On the subnet manager's own GPU node, OpenSM starts before the reboot that
// blacklisting nouveau and installing the driver need: every other IB node's
// OFED waits for it, and would otherwise wait through that reboot.
TEST_F(FabricPlanTest, TheSubnetManagerStartsBeforeItsNodeReboots) {
  const Plan plan = PlanWithGpusOnW2("  subnet_manager: w2\n");
  const auto& items = plan.ItemsOf("w2");
  auto position = [&](const std::string& step) {
    const PlanItem* item = plan.Find("w2", step);
    EXPECT_NE(item, nullptr) << step;
    return item == nullptr ? items.size()
                           : static_cast<std::size_t>(
                                 std::find(items.begin(), items.end(), item->id) - items.begin());
  };
  EXPECT_LT(position("ib.ofed"), position("ib.subnet-manager"));
  EXPECT_LT(position("ib.subnet-manager"), position("gpu.nouveau-blacklist"));
  EXPECT_EQ(position("gpu.nouveau-blacklist") + 1, position("gpu.driver"));
}

TEST(CatalogUnless, ADependencyUnlessAConditionNamesAKnownOne) {
  Diagnostics diagnostics;
  auto bad = Catalog::Parse(
      "steps:\n  - id: a\n    description: x\n    roles: [worker]\n    probe: 'true'\n"
      "    depends: [{step: a2, on: worker, unless: subnet_mgr}]\n"
      "  - id: a2\n    description: y\n    roles: [worker]\n    probe: 'true'\n",
      "/p.yaml", diagnostics);
  EXPECT_FALSE(bad);
  EXPECT_NE(diagnostics.Format().find("unknown condition 'subnet_mgr'"), std::string::npos)
      << diagnostics.Format();
}

TEST(CatalogUnless, ACycleThroughAStepThatOnlyRunsWhereTheDependencyIsDroppedIsNone) {
  const std::string text =
      "steps:\n"
      "  - id: ofed\n    description: x\n    roles: [worker]\n    probe: 'true'\n"
      "    change: {any: 'true'}\n"
      "    depends: [{step: sm, on: worker, unless: subnet_manager}]\n"
      "  - id: sm\n    description: y\n    roles: [worker]\n    probe: 'true'\n"
      "    change: {any: 'true'}\n    when: [subnet_manager]\n    depends: [ofed]\n";
  Diagnostics diagnostics;
  EXPECT_TRUE(Catalog::Parse(text, "/p.yaml", diagnostics)) << diagnostics.Format();
  // Without the `unless`, the same two steps wait for each other.
  std::string cyclic = text;
  cyclic.replace(cyclic.find(", unless: subnet_manager"), 24, "");
  Diagnostics again;
  EXPECT_FALSE(Catalog::Parse(cyclic, "/p.yaml", again));
  EXPECT_NE(again.Format().find("dependency cycle"), std::string::npos) << again.Format();
}

}  // namespace
}  // namespace gpuctl
