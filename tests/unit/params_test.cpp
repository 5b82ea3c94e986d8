#include "gpuctl/model/params.h"

#include <algorithm>
#include <stdexcept>

#include <gtest/gtest.h>

#include "gpuctl/util/digest.h"

namespace gpuctl {
namespace {

Inventory Load(const std::string& text) {
  Diagnostics diagnostics;
  auto inv = ParseInventory(text, "/lab/inv.yaml", diagnostics);
  EXPECT_TRUE(inv) << diagnostics.Format();
  return inv.value_or(Inventory{});
}

const char* kCluster = R"(cluster: lab
orchestrator: slurm
versions: {driver_branch: "550", cuda: "12.4", nccl: "2.21", slurm: "23.11"}
network: {subnet: 198.18.0.0/24}
policy: {disable_firewall: true}
nfs:
  server: s1
  exports: [{path: /data}]
  mounts: [{export: /data, path: /mnt/data}]
slurm:
  partitions:
    - {name: gpu, nodes: [w1], default: true, max_time: "2-00:00:00", default_time: "60"}
    - {name: all}
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: w1
    address: 198.18.0.11
    ib_address: 10.10.0.11
    os: rocky-9
    roles: [worker, storage]
    hardware:
      gpus: {model: NVIDIA H100 80GB HBM3, count: 8}
      ib: [{device: mlx5_0, port: 1, rate: 400}, {device: mlx5_1, rate: 400}]
  - {name: w2, address: 198.18.0.12, os: ubuntu-22.04, roles: [worker]}
  - {name: s1, address: 198.18.0.20, os: ubuntu-22.04, roles: [storage]}
)";

TEST(Params, KnownParametersAreSortedAndComplete) {
  const auto& names = KnownParameters();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names.size(), 69U);
  EXPECT_TRUE(IsKnownParameter("driver_branch"));
  EXPECT_FALSE(IsKnownParameter("driver"));
  // Every known name has a value, and nothing else does.
  const Inventory inv = Load(kCluster);
  const auto values = ParameterValues(inv, inv.nodes[0]);
  ASSERT_EQ(values.size(), names.size());
  for (const auto& name : names) {
    EXPECT_EQ(values.count(name), 1U) << name;
  }
}

TEST(Params, ValidationThresholdsAreEmptyUnlessSet) {
  Inventory inv = Load(kCluster);
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("nccl_min_busbw"), "");
  inv =
      Load(std::string(kCluster) + "validation: {nccl_min_busbw_gbps: 150, ib_min_bw_gbps: 180}\n");
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("nccl_min_busbw"), "150");
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("ib_min_bw"), "180");
}

TEST(Params, NtpServersAreSpaceSeparatedAndEmptyUnlessSet) {
  Inventory inv = Load(kCluster);
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("ntp_servers"), "");
  inv.network.ntp_servers = {"ntp1.example.org", "10.0.0.5"};
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("ntp_servers"), "ntp1.example.org 10.0.0.5");
}

TEST(Params, NodeValues) {
  const Inventory inv = Load(kCluster);
  const auto v = ParameterValues(inv, inv.nodes[1]);
  EXPECT_EQ(v.at("node_name"), "w1");
  EXPECT_EQ(v.at("node_address"), "198.18.0.11");
  EXPECT_EQ(v.at("node_roles"), "worker storage");
  EXPECT_EQ(v.at("os_id"), "rocky");
  EXPECT_EQ(v.at("os_version"), "9");
  EXPECT_EQ(v.at("os_family"), "rhel");
  EXPECT_EQ(v.at("gpu_model"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(v.at("gpu_count"), "8");
  EXPECT_EQ(v.at("ib_ports"), "mlx5_0:1:400 mlx5_1:1:400");
  const auto m = ParameterValues(inv, inv.nodes[0]);
  EXPECT_EQ(m.at("gpu_model"), "");
  EXPECT_EQ(m.at("gpu_count"), "0");
  EXPECT_EQ(m.at("ib_ports"), "");
}

TEST(Params, ClusterValues) {
  const Inventory inv = Load(kCluster);
  const auto v = ParameterValues(inv, inv.nodes[0]);
  EXPECT_EQ(v.at("cluster"), "lab");
  EXPECT_EQ(v.at("driver_branch"), "550");
  EXPECT_EQ(v.at("cuda_version"), "12.4");
  EXPECT_EQ(v.at("cudnn_version"), "9.1");
  EXPECT_EQ(v.at("nccl_version"), "2.21");
  EXPECT_EQ(v.at("slurm_version"), "23.11");
  EXPECT_EQ(v.at("kubernetes_version"), "1.30");
  EXPECT_EQ(v.at("container_toolkit_version"), "1.15");
  EXPECT_EQ(v.at("gpu_operator_version"), "v24.3.0");
  EXPECT_EQ(v.at("ofed_version"), "24.01");
  EXPECT_EQ(v.at("cni"), "flannel");
  EXPECT_EQ(v.at("pod_cidr"), "10.244.0.0/16");
  EXPECT_EQ(v.at("service_cidr"), "10.96.0.0/12");
  EXPECT_EQ(v.at("subnet"), "198.18.0.0/24");
  EXPECT_EQ(v.at("master_name"), "m1");
  EXPECT_EQ(v.at("master_address"), "198.18.0.10");
  EXPECT_EQ(v.at("worker_names"), "w1 w2");
  EXPECT_EQ(v.at("orchestrator"), "slurm");
  EXPECT_EQ(v.at("disable_firewall"), "true");
  EXPECT_EQ(v.at("disable_selinux"), "false");
  EXPECT_EQ(v.at("docker"), "false");
}

TEST(Params, SshHostKeysListTheNodesGpuctlReachedWithTheirVerifiedKeys) {
  Inventory inv = Load(kCluster);
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("ssh_host_keys"), "") << "before any connection";
  inv.nodes[0].host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMaster";
  inv.nodes[2].host_key = "ecdsa-sha2-nistp256 AAAAE2VjZHNhW2";
  EXPECT_EQ(ParameterValues(inv, inv.nodes[1]).at("ssh_host_keys"),
            "m1 198.18.0.10 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMaster\n"
            "w2 198.18.0.12 ecdsa-sha2-nistp256 AAAAE2VjZHNhW2");
}

// The last field says "mig" for a worker running MIG instances (validate.nccl
// leaves it out; steps_validate_test.cpp).
TEST(Params, GpuWorkersListsWorkersWithGpusAndTheirIbPorts) {
  const Inventory inv = Load(kCluster);
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("gpu_workers"), "w1 8 mlx5_0:1,mlx5_1:1 -");
  const Inventory two = Load(R"(cluster: t
nodes:
  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}
  - name: a
    address: 198.18.0.2
    os: ubuntu-22.04
    roles: [worker]
    hardware: {gpus: {model: A100, count: 4}}
  - name: b
    address: 198.18.0.3
    os: rocky-9
    roles: [worker]
    hardware: {gpus: {model: A100, count: 8}, ib: [{device: mlx5_2, port: 2}]}
)");
  EXPECT_EQ(ParameterValues(two, two.nodes[0]).at("gpu_workers"), "a 4 - -\nb 8 mlx5_2:2 -");
}

TEST(Params, HostsListsManagementThenIbAddresses) {
  const Inventory inv = Load(kCluster);
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("hosts"),
            "198.18.0.10 m1\n198.18.0.11 w1\n198.18.0.12 w2\n198.18.0.20 s1\n10.10.0.11 w1-ib");
}

TEST(Params, HostsSha256IsWhatSha256sumPrintsForTheBlock) {
  const Inventory inv = Load(kCluster);
  const auto values = ParameterValues(inv, inv.nodes[0]);
  // printf '%s\n' "$GPUCTL_HOSTS" | sha256sum, as os.hosts' probe runs it.
  const std::string hex = values.at("hosts_sha256");
  ASSERT_EQ(hex.size(), 64U);
  EXPECT_EQ(hex, Sha256Hex(values.at("hosts") + "\n"));
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Params, TrustedSourcesFoldConsecutiveAddressesIntoExactBlocks) {
  Inventory inv = Load(kCluster);
  // .10 .11 .12 .20 and w1's IB address: .10/31 holds .10 and .11 only;
  // .12 cannot join them (.12/30 would hold .13 and .14, not ours).
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("trusted_sources"),
            "10.10.0.11 198.18.0.10/31 198.18.0.12 198.18.0.20");
  // 256 consecutive addresses from .0 are one /24; IPv6 and names stay as
  // they are; Kubernetes adds the pod network.
  inv.nodes.resize(1);
  for (int i = 0; i < 256; ++i) {
    Node n = inv.nodes[0];
    n.name = "n" + std::to_string(i);
    n.address = "10.1.2." + std::to_string(i);
    n.ib_address.clear();
    inv.nodes.push_back(n);
  }
  inv.nodes[0].address = "fd00::1";
  inv.nodes[1].ib_address = "ib-gw.example.org";
  inv.orchestrator = Orchestrator::kKubernetes;
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("trusted_sources"),
            "10.1.2.0/24 fd00::1 ib-gw.example.org 10.244.0.0/16");
}

TEST(Params, ClusterWideValuesAreBuiltOnceAndShared) {
  const Inventory inv = Load(kCluster);
  const ParameterTable table(inv);
  const StepEnv a = table.For(inv.nodes[1]).Environment({"hosts", "node_name"});
  const StepEnv b = table.For(inv.nodes[2]).Environment({"hosts", "node_name"});
  // The same string, not an equal copy: a plan holds one per cluster.
  EXPECT_EQ(&a.at("GPUCTL_HOSTS").str(), &b.at("GPUCTL_HOSTS").str());
  EXPECT_EQ(a.at("GPUCTL_NODE_NAME"), "w1");
  EXPECT_EQ(b.at("GPUCTL_NODE_NAME"), "w2");
}

TEST(Params, GpuNodesNamesEveryNodeWithGpusOnEveryNode) {
  const Inventory inv = Load(kCluster);
  for (const Node& node : inv.nodes) {
    EXPECT_EQ(ParameterValues(inv, node).at("gpu_nodes"), "w1 198.18.0.11") << node.name;
  }
  const Inventory two = Load(R"(cluster: c
nodes:
  - {name: m, address: 10.0.0.1, os: ubuntu-22.04, roles: [master]}
  - {name: a, address: "fd00::2", os: rocky-9, roles: [worker], hardware: {gpus: {model: H100, count: 8}}}
  - {name: b, address: b.example, os: ubuntu-22.04, roles: [worker], hardware: {gpus: {model: H100, count: 4}}}
)");
  EXPECT_EQ(ParameterValues(two, two.nodes[0]).at("gpu_nodes"), "a fd00::2\nb b.example");
}

TEST(Params, GpuCountsListsKubernetesNodesWithGpus) {
  // w1 (worker, 8 GPUs) is listed; m1 and w2 have none, s1 is storage only.
  const Inventory inv = Load(kCluster);
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("gpu_counts"), "w1 8");
  const Inventory two = Load(R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: w1
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
    hardware: {gpus: {model: NVIDIA A100-SXM4-80GB, count: 8}}
  - name: s1
    address: 198.18.0.20
    os: ubuntu-22.04
    roles: [storage]
    hardware: {gpus: {model: NVIDIA A100-SXM4-80GB, count: 2}}
  - name: w2
    address: 198.18.0.12
    os: rocky-9
    roles: [worker]
    hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 4}}
)");
  EXPECT_EQ(ParameterValues(two, two.nodes[3]).at("gpu_counts"), "w1 8\nw2 4");
}

TEST(Params, Nfs) {
  const Inventory inv = Load(kCluster);
  const auto v = ParameterValues(inv, inv.nodes[2]);
  EXPECT_EQ(v.at("nfs_server_name"), "s1");
  EXPECT_EQ(v.at("nfs_server_address"), "198.18.0.20");
  EXPECT_EQ(v.at("nfs_exports"), "/data 198.18.0.0/24");
  EXPECT_EQ(v.at("nfs_mounts"), "198.18.0.20:/data /mnt/data rw,hard,nfsvers=4.1");
}

TEST(Params, NfsServerWithIpv6AddressIsBracketed) {
  const Inventory inv = Load(R"(cluster: lab
nfs:
  exports: [{path: /data, clients: "fd00::/64"}]
  mounts: [{export: /data, path: /data}]
nodes:
  - {name: m1, address: "fd00::10", os: ubuntu-22.04, roles: [master]}
  - {name: w1, address: "fd00::11", os: ubuntu-22.04, roles: [worker]}
)");
  EXPECT_EQ(ParameterValues(inv, inv.nodes[1]).at("nfs_mounts"),
            "[fd00::10]:/data /data rw,hard,nfsvers=4.1");
}

TEST(Params, Slurm) {
  const Inventory inv = Load(kCluster);
  const auto v = ParameterValues(inv, inv.nodes[0]);
  EXPECT_EQ(v.at("slurm_cluster_name"), "lab");
  // "name nodes default max_time default_time": INFINITE and '-' when unset.
  EXPECT_EQ(v.at("slurm_partitions"), "gpu w1 YES 2-00:00:00 60\nall w1,w2 NO INFINITE -");
  // Every worker, with its gres and GPU count ('-' and 0 without GPUs), for
  // slurm.conf's NodeName lines and gres.conf.
  EXPECT_EQ(v.at("slurm_nodes"), "w1 198.18.0.11 gpu:8 8 - -\nw2 198.18.0.12 - 0 - -");
}

TEST(Params, WithoutNfsOrSlurmTheValuesAreEmpty) {
  const Inventory inv = Load(R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
)");
  const auto v = ParameterValues(inv, inv.nodes[0]);
  EXPECT_EQ(v.at("nfs_server_name"), "");
  EXPECT_EQ(v.at("nfs_exports"), "");
  EXPECT_EQ(v.at("slurm_cluster_name"), "");
  EXPECT_EQ(v.at("slurm_partitions"), "");
  EXPECT_EQ(v.at("slurm_nodes"), "");
  EXPECT_EQ(v.at("worker_names"), "");
  EXPECT_EQ(v.at("orchestrator"), "kubernetes");
}

TEST(Params, StepEnvironmentExportsOnlyTheDeclaredNames) {
  const Inventory inv = Load(kCluster);
  const auto env = StepEnvironment({"driver_branch", "node_roles"}, inv, inv.nodes[1]);
  const std::map<std::string, std::string> expected = {{"GPUCTL_DRIVER_BRANCH", "550"},
                                                       {"GPUCTL_NODE_ROLES", "worker storage"}};
  EXPECT_EQ(env, expected);
  EXPECT_TRUE(StepEnvironment({}, inv, inv.nodes[1]).empty());
  EXPECT_THROW(StepEnvironment({"bogus"}, inv, inv.nodes[1]), std::invalid_argument);
}

}  // namespace
}  // namespace gpuctl
