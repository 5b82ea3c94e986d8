// Inventory loading: defaults, per-node overrides, path resolution, derived
// values, the small helpers, and the shipped example inventories.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuctl/model/inventory.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using testing::HasDiagnostic;
using testing::kMinimalInventory;
using testing::ParseText;

Inventory MustParse(const std::string& text) {
  auto p = ParseText(text);
  EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_TRUE(p.diagnostics.All().empty()) << p.diagnostics.Format();
  return p.inventory.value_or(Inventory{});
}

TEST(InventoryDefaults, AbsentBlocksTakeTheHeaderDefaults) {
  const Inventory inv = MustParse(kMinimalInventory);
  EXPECT_EQ(inv.path, "/lab/inv.yaml");
  EXPECT_EQ(inv.cluster, "lab");
  EXPECT_EQ(inv.orchestrator, Orchestrator::kKubernetes);
  EXPECT_EQ(inv.ssh.user, "root");
  EXPECT_EQ(inv.ssh.port, 22);
  EXPECT_FALSE(inv.ssh.become);
  EXPECT_EQ(inv.ssh.connect_timeout_s, 10);
  EXPECT_EQ(inv.ssh.command_timeout_s, 1800);
  EXPECT_EQ(inv.versions.driver_branch, "550");
  EXPECT_EQ(inv.versions.cuda, "12.4");
  EXPECT_EQ(inv.versions.slurm, "");  // the OS's own Slurm
  EXPECT_EQ(inv.network.subnet, "");
  EXPECT_EQ(inv.network.pod_cidr, "10.244.0.0/16");
  EXPECT_EQ(inv.network.service_cidr, "10.96.0.0/12");
  EXPECT_FALSE(inv.nfs);
  EXPECT_FALSE(inv.slurm);
  EXPECT_FALSE(inv.policy.docker);
  ASSERT_EQ(inv.nodes.size(), 2U);
  EXPECT_EQ(inv.nodes[0].os.family, OsFamily::kDebian);
  EXPECT_EQ(inv.nodes[0].where.line, 3);
  EXPECT_FALSE(inv.nodes[1].hardware.gpus);
}

TEST(InventoryDefaults, NodeSshOverridesFieldByField) {
  const Inventory inv = MustParse(R"(cluster: lab
ssh:
  user: admin
  port: 2222
  become: true
  become_password_env: LAB_SUDO
  command_timeout: 600
nodes:
  - name: m1
    address: 198.18.0.10
    os: rocky-9
    roles: [master]
    ssh: {port: 2200, become: false, become_password_env: ""}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
)");
  const SshSettings& m1 = inv.nodes[0].ssh;
  EXPECT_EQ(m1.user, "admin");
  EXPECT_EQ(m1.port, 2200);
  EXPECT_FALSE(m1.become);
  EXPECT_EQ(m1.become_password_env, "");
  EXPECT_EQ(inv.nodes[1].ssh.become_password_env, "LAB_SUDO");
  EXPECT_EQ(m1.command_timeout_s, 600);
  EXPECT_EQ(inv.nodes[1].ssh.port, 2222);
  EXPECT_TRUE(inv.nodes[1].ssh.become);
  EXPECT_EQ(inv.nodes[0].os.family, OsFamily::kRhel);
}

TEST(InventoryDefaults, SshBlockAfterNodesStillApplies) {
  const Inventory inv = MustParse(std::string(kMinimalInventory) + "ssh: {user: admin}\n");
  EXPECT_EQ(inv.nodes[1].ssh.user, "admin");
}

TEST(InventoryDefaults, PathsResolveAgainstTheInventoryDirectoryAndHome) {
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  const Inventory inv = MustParse(R"(cluster: lab
ssh:
  identity_file: keys/lab_ed25519
  known_hosts: ~/.ssh/lab_known_hosts
nodes:
  - name: m1
    address: 198.18.0.10
    os: ubuntu-22.04
    roles: [master]
    ssh: {identity_file: ../other/id, known_hosts: /etc/ssh/known}
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
)");
  EXPECT_EQ(inv.ssh.identity_file, "/lab/keys/lab_ed25519");
  EXPECT_EQ(inv.ssh.known_hosts, std::string(home) + "/.ssh/lab_known_hosts");
  EXPECT_EQ(inv.nodes[0].ssh.identity_file, "/other/id");
  EXPECT_EQ(inv.nodes[0].ssh.known_hosts, "/etc/ssh/known");
  EXPECT_EQ(inv.nodes[1].ssh.identity_file, "/lab/keys/lab_ed25519");
}

TEST(InventoryDefaults, NfsServerFallsBackToStorageThenMaster) {
  const std::string nfs = "nfs:\n  exports: [{path: /data}]\n";
  Inventory inv = MustParse(nfs + kMinimalInventory);
  EXPECT_EQ(inv.nfs->server, "m1");
  inv = MustParse(nfs + kMinimalInventory +
                  "  - {name: s1, address: 198.18.0.20, os: debian-12, roles: [storage]}\n");
  EXPECT_EQ(inv.nfs->server, "s1");
  EXPECT_EQ(inv.NfsServer()->name, "s1");
}

TEST(InventoryDefaults, NfsClientsDefaultToSubnetElseMasterSlash24) {
  Inventory inv = MustParse("nfs:\n  exports: [{path: /data}, {path: /x, clients: '*'}]\n" +
                            std::string(kMinimalInventory));
  EXPECT_EQ(inv.nfs->exports[0].clients, "198.18.0.0/24");
  EXPECT_EQ(inv.nfs->exports[1].clients, "*");
  inv = MustParse("network: {subnet: 198.18.0.0/16}\nnfs:\n  exports: [{path: /data}]\n" +
                  std::string(kMinimalInventory));
  EXPECT_EQ(inv.nfs->exports[0].clients, "198.18.0.0/16");
}

TEST(InventoryDefaults, NfsMountOptionsDefault) {
  const Inventory inv =
      MustParse("nfs:\n  exports: [{path: /data}]\n  mounts: [{export: /data, path: /mnt/d}]\n" +
                std::string(kMinimalInventory));
  EXPECT_EQ(inv.nfs->mounts[0].options, "rw,hard,nfsvers=4.1");
  EXPECT_EQ(inv.nfs->mounts[0].mount_point, "/mnt/d");
}

TEST(InventoryDefaults, SlurmDefaultsToOneBatchPartitionOfEveryWorker) {
  const Inventory inv = MustParse("orchestrator: slurm\n" + std::string(kMinimalInventory));
  ASSERT_TRUE(inv.slurm);
  EXPECT_EQ(inv.slurm->cluster_name, "lab");
  ASSERT_EQ(inv.slurm->partitions.size(), 1U);
  EXPECT_EQ(inv.slurm->partitions[0].name, "batch");
  EXPECT_TRUE(inv.slurm->partitions[0].is_default);
  EXPECT_EQ(inv.slurm->partitions[0].nodes, std::vector<std::string>{"w1"});
}

TEST(InventoryDefaults, SlurmBlockWithoutSlurmOrchestratorWarns) {
  auto p = ParseText("slurm: {cluster_name: x}\n" + std::string(kMinimalInventory));
  EXPECT_TRUE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 1, 1, "the slurm block is ignored", Severity::kWarning));
}

TEST(InventoryDefaults, HardwareAndIbPorts) {
  const Inventory inv = MustParse(R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: w1
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker, storage]
    hardware:
      gpus: {model: NVIDIA H100 80GB HBM3, count: 8, nvswitch: true}
      ib: [{device: mlx5_0}, {device: mlx5_1, port: 2, rate: 400}]
)");
  const Node& w1 = inv.nodes[1];
  EXPECT_EQ(w1.GpuCount(), 8);
  EXPECT_EQ(w1.hardware.gpus->model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(w1.hardware.ib[0].port, 1);
  EXPECT_EQ(w1.hardware.ib[0].rate_gbps, 0);
  EXPECT_EQ(w1.hardware.ib[1].port, 2);
  EXPECT_EQ(w1.hardware.ib[1].rate_gbps, 400);
  EXPECT_TRUE(w1.Has(Role::kStorage));
  EXPECT_EQ(inv.WithRole(Role::kWorker).size(), 1U);
  EXPECT_EQ(inv.Find("w1"), &inv.nodes[1]);
  EXPECT_EQ(inv.Find("nope"), nullptr);
  EXPECT_EQ(inv.Master(), &inv.nodes[0]);
}

TEST(InventoryHelpers, NamesRoundTrip) {
  EXPECT_EQ(ToString(Role::kStorage), "storage");
  EXPECT_EQ(ParseRole("worker"), Role::kWorker);
  EXPECT_FALSE(ParseRole("Worker"));
  EXPECT_EQ(ToString(OsFamily::kRhel), "rhel");
  EXPECT_EQ(ToString(Orchestrator::kNone), "none");
  EXPECT_EQ(KnownOsNames().size(), 12U);
  for (const auto& name : KnownOsNames()) {
    auto os = ParseOs(name);
    ASSERT_TRUE(os) << name;
    EXPECT_EQ(os->Name(), name);
  }
  EXPECT_EQ(ParseOs("almalinux-9")->family, OsFamily::kRhel);
  EXPECT_EQ(ParseOs("debian-12")->version, "12");
  EXPECT_FALSE(ParseOs("centos-7"));
}

TEST(InventoryLoad, ReadsAFileAndReportsAMissingOne) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpuctl-inventory-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "inv.yaml";
  std::ofstream(file) << kMinimalInventory << "ssh: {identity_file: id}\n";
  Diagnostics diagnostics;
  auto inv = LoadInventory(file.string(), diagnostics);
  ASSERT_TRUE(inv) << diagnostics.Format();
  EXPECT_EQ(inv->ssh.identity_file, (dir / "id").string());
  fs::remove_all(dir);

  Diagnostics missing;
  EXPECT_FALSE(LoadInventory((dir / "absent.yaml").string(), missing));
  EXPECT_THAT(missing.Format(), ::testing::HasSubstr("absent.yaml: error: cannot read"));
}

TEST(InventoryLoad, ShippedInventoriesValidateCleanly) {
  const fs::path dir = fs::path(GPUCTL_SOURCE_DIR) / "inventories";
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    ++seen;
    Diagnostics diagnostics;
    EXPECT_TRUE(LoadInventory(entry.path().string(), diagnostics)) << entry.path();
    EXPECT_TRUE(diagnostics.All().empty()) << diagnostics.Format();
  }
  EXPECT_GE(seen, 3);
}

TEST(InventoryLoad, SeedMatchesTheRunbooks) {
  Diagnostics diagnostics;
  auto inv = LoadInventory(std::string(GPUCTL_SOURCE_DIR) + "/inventories/seed.yaml", diagnostics);
  ASSERT_TRUE(inv) << diagnostics.Format();
  EXPECT_EQ(inv->nodes.size(), 4U);
  EXPECT_EQ(inv->Master()->address, "198.18.0.10");
  const Node* w2 = inv->Find("worker2");
  ASSERT_NE(w2, nullptr);
  EXPECT_EQ(w2->GpuCount(), 8);
  EXPECT_EQ(w2->hardware.gpus->model, "NVIDIA A100-SXM4-80GB");
  ASSERT_EQ(w2->hardware.ib.size(), 2U);
  EXPECT_EQ(w2->hardware.ib[1].device, "mlx5_1");
  EXPECT_EQ(w2->hardware.ib[1].rate_gbps, 200);
  EXPECT_EQ(inv->NfsServer()->name, "storage1");
  EXPECT_EQ(inv->nfs->mounts[0].mount_point, "/data/shared");
}

}  // namespace
}  // namespace gpuctl
