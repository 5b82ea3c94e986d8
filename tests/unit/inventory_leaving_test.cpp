// A node leaving the cluster (`state: absent`): the inventory keeps it (Find,
// leaving_nodes) but leaves it out of every cluster-wide value and role
// lookup, and refuses an absent node the cluster still needs, each error at
// its exact position.
#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuctl/model/inventory.h"
#include "gpuctl/model/params.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using ::testing::HasSubstr;
using testing::kMinimalInventory;
using ::testing::Not;
using testing::ParseText;

// m1 (master), w1 (worker, stays), w2 (worker, leaving; its `state` value
// at 20:12), s1 (storage).
constexpr const char* kLeaving = R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
    ib_address: 10.10.0.10
    os: ubuntu-22.04
    roles: [master]
  - name: w1
    address: 198.18.0.11
    ib_address: 10.10.0.11
    os: ubuntu-22.04
    roles: [worker]
    hardware: {gpus: {model: NVIDIA A100 80GB PCIe, count: 2}}
  - name: w2
    address: 198.18.0.12
    ib_address: 10.10.0.12
    os: ubuntu-22.04
    roles: [worker]
    hardware: {gpus: {model: NVIDIA A100 80GB PCIe, count: 2}}
    state: absent
  - name: s1
    address: 198.18.0.13
    os: ubuntu-22.04
    roles: [storage]
)";

std::vector<std::string> Names(const std::vector<const Node*>& nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const Node* node : nodes) {
    names.push_back(node->name);
  }
  return names;
}

// The value's lines (or words) that mention `text`.
bool Mentions(const std::string& value, const std::string& text) {
  return value.find(text) != std::string::npos;
}

TEST(InventoryLeavingTest, AnAbsentNodeIsReadAndFoundButHoldsNoRole) {
  auto p = ParseText(kLeaving);
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_FALSE(p.diagnostics.HasErrors()) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  ASSERT_EQ(inv.nodes.size(), 4U);
  EXPECT_FALSE(inv.nodes[0].absent);
  EXPECT_FALSE(inv.nodes[1].absent);
  EXPECT_TRUE(inv.nodes[2].absent);
  EXPECT_FALSE(inv.nodes[3].absent);
  EXPECT_TRUE(inv.HasLeavingNodes());

  // Find still knows it, and it keeps its declared role.
  const Node* w2 = inv.Find("w2");
  ASSERT_NE(w2, nullptr);
  EXPECT_TRUE(w2->absent);
  EXPECT_TRUE(w2->Has(Role::kWorker));
  EXPECT_EQ(w2->address, "198.18.0.12");

  // Every role lookup leaves it out.
  EXPECT_EQ(Names(inv.WithRole(Role::kWorker)), std::vector<std::string>{"w1"});
  const auto holders = inv.RoleHolders();
  ASSERT_EQ(holders.count(Role::kWorker), 1U);
  EXPECT_EQ(Names(holders.at(Role::kWorker)), std::vector<std::string>{"w1"});
  ASSERT_NE(inv.Master(), nullptr);
  EXPECT_EQ(inv.Master()->name, "m1");
  EXPECT_EQ(Names(inv.WithRole(Role::kMaster)), std::vector<std::string>{"m1"});
}

TEST(InventoryLeavingTest, PresentIsTheDefaultAndMayBeWritten) {
  auto p = ParseText(std::string(kMinimalInventory) + "    state: present\n");
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_FALSE(p.inventory->Find("w1")->absent);
  EXPECT_FALSE(p.inventory->HasLeavingNodes());
  EXPECT_EQ(Names(p.inventory->WithRole(Role::kWorker)), std::vector<std::string>{"w1"});
  EXPECT_EQ(ParameterValues(*p.inventory, p.inventory->nodes[0]).at("leaving_nodes"), "");
}

TEST(InventoryLeavingTest, ClusterWideValuesLeaveTheAbsentNodeOut) {
  auto p = ParseText(kLeaving);
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  Inventory& inv = *p.inventory;
  // Host keys as a run's own connections would have verified them.
  inv.nodes[0].host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM1";
  inv.nodes[1].host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIW1";
  inv.nodes[2].host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIW2";
  // Seen from a node that stays, and from the leaving node itself: the
  // cluster-wide values are the same.
  for (const Node* from : {inv.Find("w1"), inv.Find("w2")}) {
    SCOPED_TRACE(from->name);
    const auto values = ParameterValues(inv, *from);
    const std::string& hosts = values.at("hosts");
    EXPECT_THAT(hosts, HasSubstr("198.18.0.10 m1"));
    EXPECT_THAT(hosts, HasSubstr("198.18.0.11 w1"));
    EXPECT_THAT(hosts, HasSubstr("10.10.0.11 w1-ib"));
    EXPECT_THAT(hosts, HasSubstr("198.18.0.13 s1"));
    EXPECT_FALSE(Mentions(hosts, "w2")) << hosts;
    EXPECT_FALSE(Mentions(hosts, "198.18.0.12")) << hosts;
    EXPECT_FALSE(Mentions(hosts, "10.10.0.12")) << hosts;

    EXPECT_EQ(values.at("worker_names"), "w1");
    EXPECT_EQ(values.at("leaving_nodes"), "w2");

    const std::string& keys = values.at("ssh_host_keys");
    EXPECT_TRUE(Mentions(keys, "AAAAIW1")) << keys;
    EXPECT_FALSE(Mentions(keys, "AAAAIW2")) << keys;
    EXPECT_FALSE(Mentions(keys, "w2")) << keys;

    EXPECT_TRUE(Mentions(values.at("gpu_nodes"), "w1")) << values.at("gpu_nodes");
    EXPECT_FALSE(Mentions(values.at("gpu_nodes"), "w2")) << values.at("gpu_nodes");
    EXPECT_TRUE(Mentions(values.at("gpu_counts"), "w1")) << values.at("gpu_counts");
    EXPECT_FALSE(Mentions(values.at("gpu_counts"), "w2")) << values.at("gpu_counts");
  }
}

// Every cluster-wide value with w2 leaving is what it would be without w2 in
// the file at all, and not what it is with w2 staying.
TEST(InventoryLeavingTest, ClusterWideValuesAreAsIfTheNodeWereGone) {
  auto leaving = ParseText(kLeaving);
  ASSERT_TRUE(leaving.inventory) << leaving.diagnostics.Format();
  Inventory gone = *leaving.inventory;
  gone.nodes.erase(gone.nodes.begin() + 2);
  Inventory staying = *leaving.inventory;
  staying.nodes[2].absent = false;
  for (Inventory* inv : {&*leaving.inventory, &gone, &staying}) {
    for (Node& node : inv->nodes) {
      node.host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + node.name;
    }
  }
  const auto with_leaving = ParameterValues(*leaving.inventory, leaving.inventory->nodes[0]);
  const auto without = ParameterValues(gone, gone.nodes[0]);
  const auto with_staying = ParameterValues(staying, staying.nodes[0]);
  for (const char* name : {"hosts", "trusted_sources", "ssh_host_keys", "gpu_nodes", "gpu_counts",
                           "worker_names", "gpu_workers"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(with_leaving.at(name), without.at(name));
    EXPECT_NE(with_leaving.at(name), with_staying.at(name));
  }
  EXPECT_EQ(with_leaving.at("leaving_nodes"), "w2");
  EXPECT_EQ(without.at("leaving_nodes"), "");
  EXPECT_EQ(with_staying.at("leaving_nodes"), "");
}

TEST(InventoryLeavingTest, LeavingNodesListsEveryAbsentNodeInInventoryOrder) {
  // Not in name order: w9 comes first in the file.
  auto p = ParseText(R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: w9, address: 198.18.0.19, os: ubuntu-22.04, roles: [worker], state: absent}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
  - {name: w3, address: 198.18.0.13, os: ubuntu-22.04, roles: [worker], state: absent}
)");
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const auto values = ParameterValues(*p.inventory, p.inventory->nodes[0]);
  EXPECT_EQ(values.at("leaving_nodes"), "w9 w3");
  EXPECT_EQ(values.at("worker_names"), "w1");
}

TEST(InventoryLeavingTest, SlurmNodesAndPartitionsLeaveTheAbsentWorkerOut) {
  auto p = ParseText(R"(cluster: lab
orchestrator: slurm
slurm:
  partitions:
    - {name: all, default: true}
    - {name: gpu, nodes: [w1]}
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
  - {name: w2, address: 198.18.0.12, os: ubuntu-22.04, roles: [worker], state: absent}
)");
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const auto values = ParameterValues(*p.inventory, p.inventory->nodes[0]);
  const std::string& nodes = values.at("slurm_nodes");
  EXPECT_TRUE(Mentions(nodes, "w1 198.18.0.11")) << nodes;
  EXPECT_FALSE(Mentions(nodes, "w2")) << nodes;
  // A partition without nodes is every worker that stays.
  const std::string& partitions = values.at("slurm_partitions");
  EXPECT_TRUE(Mentions(partitions, "all w1 YES")) << partitions;
  EXPECT_FALSE(Mentions(partitions, "w2")) << partitions;
}

TEST(InventoryLeavingTest, AnAbsentStorageNodeDoesNotServeNfs) {
  // No nfs.server: the first storage node serves, unless it is leaving.
  auto p = ParseText(R"(cluster: lab
network: {subnet: 198.18.0.0/24}
nfs:
  exports: [{path: /data}]
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: s1, address: 198.18.0.11, os: ubuntu-22.04, roles: [storage], state: absent}
  - {name: s2, address: 198.18.0.12, os: ubuntu-22.04, roles: [storage]}
)");
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  ASSERT_NE(p.inventory->NfsServer(), nullptr);
  EXPECT_EQ(p.inventory->NfsServer()->name, "s2");
}

TEST(InventoryLeavingTest, TheMasterCannotLeave) {
  auto p = ParseText(R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
    os: ubuntu-22.04
    roles: [master]
    state: absent
  - name: w1
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 7, 12,
                            "node 'm1' is the master: it cannot leave the cluster it runs"));
}

TEST(InventoryLeavingTest, AMasterThatIsAlsoAWorkerCannotLeaveEither) {
  auto p = ParseText(R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master, worker], state: absent}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 88, "cannot leave the cluster it runs"));
}

TEST(InventoryLeavingTest, NfsServerCannotBeAnAbsentNode) {
  auto p = ParseText(R"(cluster: lab
network: {subnet: 198.18.0.0/24}
nfs:
  server: s1
  exports: [{path: /data}]
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
  - {name: s1, address: 198.18.0.12, os: ubuntu-22.04, roles: [storage], state: absent}
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 11, "nfs.server 's1' has state absent"));
  // Not mistaken for a name that is not a node.
  EXPECT_THAT(p.diagnostics.Format(), Not(HasSubstr("is not a node")));
}

TEST(InventoryLeavingTest, ASlurmPartitionCannotNameAnAbsentNode) {
  auto p = ParseText(R"(cluster: lab
orchestrator: slurm
slurm:
  partitions:
    - name: gpu
      nodes: [w1, w2]
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
  - {name: w2, address: 198.18.0.12, os: ubuntu-22.04, roles: [worker], state: absent}
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(
      HasDiagnostic(p.diagnostics, 6, 19, "partition 'gpu' names 'w2', which has state absent"));
  // w1, which stays, is fine.
  EXPECT_FALSE(HasDiagnostic(p.diagnostics, 6, 15, "partition 'gpu'"));
}

TEST(InventoryLeavingTest, AnUnknownStateIsAnErrorAtItsValue) {
  auto p = ParseText(std::string(kMinimalInventory) + "    state: gone\n");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 11, 12, "unknown state 'gone'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 11, 12, "absent"));
}

TEST(InventoryLeavingTest, OnlyANodeItselfCanLeave) {
  // node_defaults has no `state`: a whole cluster does not leave at once.
  auto p = ParseText("cluster: lab\nnode_defaults:\n  state: absent\n" +
                     std::string(kMinimalInventory).substr(std::string("cluster: lab\n").size()));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 3, "unknown key 'state'"));
}

}  // namespace
}  // namespace gpuctl
