// The tuning keys of the inventory: `sysctl:` (top level, node_defaults, a
// node; the node's value wins key by key), checked by kind at its
// file:line:column, refused where Kubernetes cannot work with it; and
// `compute_interface` (network., node_defaults, a node) for NCCL's sockets.
// What they become: the sysctl, compute_interface, ib_address and fabric
// step parameters.
#include <gtest/gtest.h>

#include "gpuctl/model/params.h"
#include "gpuctl/model/value_kinds.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::kMinimalInventory;
using testing::ParseText;

// Node w1 is at lines 7-10 of kMinimalInventory; text appended to it lands
// from line 11 on.
TEST(SysctlKinds, AcceptWhatSysctlDTakesAndNothingAShellReads) {
  for (const std::string& key :
       std::vector<std::string>{"vm.swappiness", "net.ipv4.tcp_rmem", "net/core/rmem_max",
                                "net.bridge.bridge-nf-call-iptables",
                                "net/ipv4/conf/eth0.100/rp_filter", "kernel.shmmax"}) {
    EXPECT_EQ(SysctlKeyProblem(key), "") << key;
  }
  for (const std::string& key :
       std::vector<std::string>{"", "swappiness", "Vm.swappiness", "vm..swappiness", "vm.", ".vm",
                                "1vm.x", "net.ipv4/conf", "net.ipv4.conf.*.rp_filter",
                                "vm swappiness", "vm.swappiness\n", std::string(256, 'a') + ".b"}) {
    EXPECT_NE(SysctlKeyProblem(key), "") << key;
  }
  for (const std::string& value :
       std::vector<std::string>{"0", "10", "4096 87380 134217728", "fq", "32768 60999",
                                "/var/crash/core.%e.%p", "bbr"}) {
    EXPECT_EQ(SysctlValueProblem(value), "") << value;
  }
  for (const std::string& value :
       std::vector<std::string>{"", " 1", "1 ", "1  2", "1\t2", "1\n2", "$(reboot)", "`id`", "a;b",
                                "a|b", "'1'", "\"1\"", "# 1", "a\\b", std::string(1025, '1')}) {
    EXPECT_NE(SysctlValueProblem(value), "") << value;
  }
}

TEST(InventorySysctl, NodeValuesWinOverNodeDefaultsOverTheClusterKeyByKey) {
  auto p = ParseText(std::string(R"(cluster: lab
sysctl:
  vm.swappiness: 10
  net.core.rmem_max: 134217728
  net/ipv4/tcp_rmem: 4096 87380 134217728
node_defaults:
  sysctl: {net.core.somaxconn: 4096, vm.swappiness: 5}
network: {compute_interface: ens10f0}
nodes:
  - {name: m1, address: 198.18.0.10, roles: [master]}
  - name: w1
    address: 198.18.0.11
    roles: [worker]
    compute_interface: ib0
    sysctl:
      net.core.rmem_max: 268435456
      net/ipv4/conf/eth0.100/rp_filter: 2
)"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_TRUE(p.diagnostics.All().empty()) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  // The slash form becomes the dotted one, unless a part holds a dot.
  EXPECT_EQ(inv.sysctl,
            (std::map<std::string, std::string>{{"net.core.rmem_max", "134217728"},
                                                {"net.ipv4.tcp_rmem", "4096 87380 134217728"},
                                                {"vm.swappiness", "10"}}));
  EXPECT_EQ(inv.nodes[0].sysctl,
            (std::map<std::string, std::string>{{"net.core.rmem_max", "134217728"},
                                                {"net.core.somaxconn", "4096"},
                                                {"net.ipv4.tcp_rmem", "4096 87380 134217728"},
                                                {"vm.swappiness", "5"}}));
  EXPECT_EQ(inv.nodes[1].sysctl,
            (std::map<std::string, std::string>{{"net.core.rmem_max", "268435456"},
                                                {"net.core.somaxconn", "4096"},
                                                {"net.ipv4.tcp_rmem", "4096 87380 134217728"},
                                                {"net/ipv4/conf/eth0.100/rp_filter", "2"},
                                                {"vm.swappiness", "5"}}));
  EXPECT_EQ(inv.nodes[0].compute_interface, "ens10f0");
  EXPECT_EQ(inv.nodes[1].compute_interface, "ib0");

  // What os.sysctl and ib.nccl-env get: "key = value" lines, sorted.
  const auto w1 = ParameterValues(inv, inv.nodes[1]);
  EXPECT_EQ(w1.at("sysctl"),
            "net.core.rmem_max = 268435456\nnet.core.somaxconn = 4096\n"
            "net.ipv4.tcp_rmem = 4096 87380 134217728\nnet/ipv4/conf/eth0.100/rp_filter = 2\n"
            "vm.swappiness = 5");
  EXPECT_EQ(w1.at("compute_interface"), "ib0");
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("compute_interface"), "ens10f0");
}

TEST(InventorySysctl, KeysAndValuesAreCheckedByKindAtTheirPlace) {
  auto p = ParseText(std::string(kMinimalInventory) + R"(    sysctl:
      vm.swappiness: "10; reboot"
      Net.core.rmem_max: 1
      kernel..shmmax: 1
      swappiness: 1
      net.ipv4.conf.*.rp_filter: 1
      vm.dirty_ratio: "5\n6"
      vm.min_free_kbytes: "1  2"
      vm/swappiness: 3
      vm.overcommit_memory: [1]
sysctl: 5
)");
  EXPECT_FALSE(p.inventory);
  const Diagnostics& d = p.diagnostics;
  EXPECT_TRUE(HasDiagnostic(d, 12, 22,
                            "for vm.swappiness: a kernel parameter value may not "
                            "contain ';'"))
      << d.Format();
  EXPECT_TRUE(HasDiagnostic(d, 13, 7,
                            "invalid kernel parameter name 'Net.core.rmem_max': a "
                            "kernel parameter name may not contain 'N'"))
      << d.Format();
  EXPECT_TRUE(HasDiagnostic(d, 14, 7, "has no empty part")) << d.Format();
  EXPECT_TRUE(HasDiagnostic(d, 15, 7, "has parts separated by '.'")) << d.Format();
  EXPECT_TRUE(HasDiagnostic(d, 16, 7, "may not contain '*'")) << d.Format();
  EXPECT_TRUE(HasDiagnostic(d, 17, 23, "may not contain a line break")) << d.Format();
  EXPECT_TRUE(HasDiagnostic(d, 18, 27, "separated by single spaces")) << d.Format();
  EXPECT_TRUE(
      HasDiagnostic(d, 19, 7, "duplicate kernel parameter vm.swappiness (first at line 12)"))
      << d.Format();
  EXPECT_TRUE(HasDiagnostic(d, 20, 29, "expected a value for vm.overcommit_memory, got a list"))
      << d.Format();
  EXPECT_TRUE(HasDiagnostic(d, 21, 9, "expected a mapping of kernel parameters, got '5'"))
      << d.Format();
}

TEST(InventorySysctl, KubernetesKeysMustKeepTheirValueUnderKubernetesOnly) {
  const std::string keys = R"(sysctl:
  net.ipv4.ip_forward: 0
  net.bridge.bridge-nf-call-iptables: 0
  net.bridge.bridge-nf-call-ip6tables: 0
)";
  auto k8s = ParseText(std::string(kMinimalInventory) + keys);
  EXPECT_FALSE(k8s.inventory);
  EXPECT_TRUE(HasDiagnostic(k8s.diagnostics, 12, 24,
                            "Kubernetes needs net.ipv4.ip_forward = 1: pod traffic between nodes "
                            "is routed through each node"))
      << k8s.diagnostics.Format();
  EXPECT_TRUE(HasDiagnostic(k8s.diagnostics, 13, 39,
                            "Kubernetes needs net.bridge.bridge-nf-call-iptables = 1"))
      << k8s.diagnostics.Format();
  EXPECT_TRUE(HasDiagnostic(k8s.diagnostics, 14, 40, "bridged IPv6 pod traffic bypasses",
                            Severity::kWarning))
      << k8s.diagnostics.Format();

  // Slurm (or nothing) does not route pod traffic: the admin's choice.
  auto slurm = ParseText(std::string(kMinimalInventory) + "orchestrator: slurm\n" + keys);
  ASSERT_TRUE(slurm.inventory) << slurm.diagnostics.Format();
  EXPECT_EQ(slurm.inventory->sysctl.at("net.ipv4.ip_forward"), "0");
}

TEST(InventoryComputeInterface, IsCheckedAsAnInterfaceName) {
  auto p = ParseText(std::string(kMinimalInventory) +
                     "    compute_interface: \"eth0; reboot\"\n"
                     "network: {compute_interface: a-very-long-interface}\n");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 11, 24, "invalid compute interface"))
      << p.diagnostics.Format();
  EXPECT_TRUE(
      HasDiagnostic(p.diagnostics, 12, 30, "invalid compute interface 'a-very-long-interface'"))
      << p.diagnostics.Format();
}

TEST(InventoryTuningParams, FabricIsAGpuOrRdmaNodeAndIbAddressIsPassedOn) {
  auto p = ParseText(R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, roles: [master]}
  - name: w1
    address: 198.18.0.11
    ib_address: 10.10.0.11
    roles: [worker]
    hardware: {gpus: {model: "NVIDIA H100 80GB HBM3", count: 8}}
  - name: s1
    address: 198.18.0.12
    roles: [storage]
    hardware: {ib: [{device: mlx5_0}]}
)");
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  const auto m1 = ParameterValues(inv, inv.nodes[0]);
  const auto w1 = ParameterValues(inv, inv.nodes[1]);
  const auto s1 = ParameterValues(inv, inv.nodes[2]);
  EXPECT_EQ(m1.at("fabric"), "false");
  EXPECT_EQ(w1.at("fabric"), "true");
  EXPECT_EQ(s1.at("fabric"), "true");
  EXPECT_EQ(m1.at("sysctl"), "");
  EXPECT_EQ(m1.at("ib_address"), "");
  EXPECT_EQ(w1.at("ib_address"), "10.10.0.11");
  EXPECT_EQ(w1.at("compute_interface"), "");
}

}  // namespace
}  // namespace gpuctl
