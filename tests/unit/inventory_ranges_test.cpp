// Node ranges (name: gpu[01-16], address: 10.0.1.[11-26]) and node_defaults
// in the inventory: expansion, counts that must agree, merging, and
// diagnostics that still point at the range entry.
#include <gtest/gtest.h>

#include "gpuctl/model/inventory.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::ParseText;

const Node* Find(const Inventory& inventory, const std::string& name) {
  for (const auto& node : inventory.nodes) {
    if (node.name == name) {
      return &node;
    }
  }
  return nullptr;
}

constexpr const char* kRanges = R"(cluster: lab
node_defaults:
  os: ubuntu-22.04
  roles: [worker]
  ssh:
    user: admin
  hardware:
    gpus: {model: NVIDIA H100 80GB HBM3, count: 8}
    ib:
      - device: mlx5_0
nodes:
  - name: m1
    address: 198.18.0.10
    roles: [master]
    hardware: {}
  - name: gpu[01-16]
    address: 10.0.1.[11-26]
  - name: gpu17
    address: 10.0.1.27
    os: rocky-9
    ssh: {port: 2222}
    hardware:
      gpus: {model: NVIDIA A100 80GB PCIe, count: 4}
)";

TEST(InventoryRanges, ARangeEntryExpandsIntoNodesPairedWithItsAddresses) {
  const auto p = ParseText(kRanges);
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  ASSERT_EQ(inv.nodes.size(), 18U);
  EXPECT_EQ(inv.nodes[1].name, "gpu01");
  EXPECT_EQ(inv.nodes[1].address, "10.0.1.11");
  EXPECT_EQ(inv.nodes[16].name, "gpu16");
  EXPECT_EQ(inv.nodes[16].address, "10.0.1.26");
  EXPECT_EQ(inv.nodes[17].name, "gpu17");
  // Each expanded node remembers the range entry it came from.
  EXPECT_EQ(inv.nodes[1].where.line, 16);
  EXPECT_EQ(inv.nodes[16].where.line, 16);
}

TEST(InventoryRanges, NodeDefaultsApplyAndANodesOwnKeysWinKeyByKey) {
  const auto p = ParseText(kRanges);
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Node* gpu = Find(*p.inventory, "gpu05");
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(gpu->Has(Role::kWorker));
  EXPECT_EQ(gpu->os.Name(), "ubuntu-22.04");
  EXPECT_EQ(gpu->ssh.user, "admin");
  EXPECT_EQ(gpu->ssh.port, 22);
  ASSERT_TRUE(gpu->hardware.gpus);
  EXPECT_EQ(gpu->hardware.gpus->count, 8);
  ASSERT_EQ(gpu->hardware.ib.size(), 1U);

  const Node* master = Find(*p.inventory, "m1");
  ASSERT_NE(master, nullptr);
  EXPECT_TRUE(master->Has(Role::kMaster));
  EXPECT_FALSE(master->Has(Role::kWorker));  // its own roles replace the defaults'
  EXPECT_EQ(master->os.Name(), "ubuntu-22.04");
  EXPECT_FALSE(master->hardware.gpus) << "hardware: {} is none";
  EXPECT_TRUE(master->hardware.ib.empty());

  const Node* odd = Find(*p.inventory, "gpu17");
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->os.Name(), "rocky-9");
  EXPECT_EQ(odd->ssh.user, "admin");  // ssh merged key by key
  EXPECT_EQ(odd->ssh.port, 2222);
  ASSERT_TRUE(odd->hardware.gpus);
  EXPECT_EQ(odd->hardware.gpus->count, 4);
  EXPECT_EQ(odd->hardware.gpus->model, "NVIDIA A100 80GB PCIe");
  ASSERT_EQ(odd->hardware.ib.size(), 1U);  // hardware merged key by key: ib kept
  EXPECT_EQ(odd->hardware.ib[0].device, "mlx5_0");
}

TEST(InventoryRanges, AnAddressRangeOfAnotherCountIsAnErrorAtTheAddress) {
  const auto p = ParseText(R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
    roles: [master]
  - name: gpu[01-04]
    address: 10.0.1.[11-13]
    roles: [worker]
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 7, 14, "has 3 addresses, but the name range has 4"));
}

TEST(InventoryRanges, OneAddressForARangeOfNodesIsAnError) {
  const auto p = ParseText(R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
    roles: [master]
  - name: gpu[01-04]
    address: 10.0.1.11
    roles: [worker]
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 7, 14, "one address for 4 nodes"));
}

TEST(InventoryRanges, EachExpandedValueIsCheckedByItsKindAtTheRangesMark) {
  const auto bad_address = ParseText(R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
    roles: [master]
  - name: gpu[1-8]
    address: 10.0.1.[250-257]
    roles: [worker]
)");
  EXPECT_FALSE(bad_address.inventory);
  EXPECT_TRUE(HasDiagnostic(bad_address.diagnostics, 7, 14, "10.0.1.256"));

  const auto bad_range = ParseText(R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
    roles: [master]
  - name: gpu[04-01]
    address: 10.0.1.[11-14]
    roles: [worker]
)");
  EXPECT_FALSE(bad_range.inventory);
  EXPECT_TRUE(HasDiagnostic(bad_range.diagnostics, 6, 11, "ends before it starts"));
}

TEST(InventoryRanges, ADuplicateFromARangePointsAtTheRangeEntry) {
  const auto p = ParseText(R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
    roles: [master]
  - name: gpu[01-02]
    address: 10.0.1.[11-12]
    roles: [worker]
  - name: gpu02
    address: 10.0.1.20
    roles: [worker]
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 9, 11, "duplicate node name 'gpu02' (first at line 6)"));
}

TEST(InventoryRanges, RolesMayComeFromNodeDefaultsOnly) {
  const auto missing = ParseText(R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
)");
  EXPECT_FALSE(missing.inventory);
  EXPECT_TRUE(HasDiagnostic(missing.diagnostics, 3, 5, "roles"));

  const auto defaulted = ParseText(R"(cluster: lab
node_defaults:
  roles: [master, worker]
nodes:
  - name: m1
    address: 198.18.0.10
)");
  ASSERT_TRUE(defaulted.inventory) << defaulted.diagnostics.Format();
  EXPECT_TRUE(defaulted.inventory->nodes[0].Has(Role::kMaster));
}

TEST(InventoryRanges, NodeDefaultsValuesAreCheckedAndUnknownKeysRefused) {
  const auto p = ParseText(R"(cluster: lab
node_defaults:
  os: ubuntu-22.4
  address: 10.0.0.1
nodes:
  - name: m1
    address: 198.18.0.10
    roles: [master]
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 7, "OS"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 3, "address"));
}

}  // namespace
}  // namespace gpuctl
