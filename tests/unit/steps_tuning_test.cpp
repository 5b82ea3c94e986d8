// The tuning steps' scripts against node files and real tool output:
// os.sysctl (the catalog's values, runbook 003's buffers on GPU/RDMA nodes,
// the inventory's sysctl over them; the probe names each key that differs,
// in the file and live), os.memlock (limits.d, systemd's default, a fresh
// session's ulimit -l) and ib.nccl-env on an
// Ethernet-only node and with a compute interface or ib_address. Files are
// faked in a private mount namespace (root only), tools stubbed.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

constexpr const char* kTuningInventory = R"(cluster: t
sysctl: {vm.swappiness: 10}
nodes:
  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: worker1
    address: 198.18.0.11
    os: rocky-9
    roles: [worker]
    sysctl: {net.core.somaxconn: 8192}
    hardware:
      gpus: {model: "NVIDIA H100 80GB HBM3", count: 8}
      ib: [{device: mlx5_0, port: 1, rate: 400}]
)";

const char* kSysctl = "/etc/sysctl.d/90-gpuctl.conf";
const char* kHeader =
    "# Written by gpuctl (os.sysctl): the catalog's values, the inventory's sysctl over them; "
    "edits are replaced.\n";

// The keys os.sysctl wants on worker1, in the file's order.
const std::vector<std::pair<std::string, std::string>> kWorkerWant = {
    {"net.bridge.bridge-nf-call-iptables", "1"},
    {"net.bridge.bridge-nf-call-ip6tables", "1"},
    {"net.ipv4.ip_forward", "1"},
    {"net.ipv4.tcp_keepalive_time", "600"},
    {"vm.overcommit_memory", "1"},
    {"vm.swappiness", "10"},
    {"net.core.rmem_max", "134217728"},
    {"net.core.wmem_max", "134217728"},
    {"net.ipv4.tcp_rmem", "4096 87380 134217728"},
    {"net.ipv4.tcp_wmem", "4096 87380 134217728"},
    {"net.core.somaxconn", "8192"},
};

std::string FileOf(const std::vector<std::pair<std::string, std::string>>& keys) {
  std::string text = kHeader;
  for (const auto& [k, v] : keys) text += k + " = " + v + "\n";
  return text;
}

// /proc/sys/<key as a path>.
std::string ProcPath(std::string key) {
  for (char& c : key) c = c == '.' ? '/' : c;
  return "/proc/sys/" + key;
}

class TuningStepsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  }
  // Every wanted key's live value as the kernel shows it: tab-separated
  // words (tcp_rmem), `changed` replacing some.
  void Live(const std::vector<std::pair<std::string, std::string>>& changed = {}) {
    for (auto [k, v] : kWorkerWant) {
      for (const auto& [ck, cv] : changed) v = ck == k ? cv : v;
      for (char& c : v) c = c == ' ' ? '\t' : c;
      h.File(ProcPath(k), v + "\n");
    }
  }
  StepHarness h{kTuningInventory};
};

TEST_F(TuningStepsTest, SysctlNamesEachKeyTheFileLacksOrHasOtherwise) {
  EXPECT_EQ(h.Probe("os.sysctl", "worker1").out, std::string(kSysctl) + " is missing\n");
  // The file gpuctl wrote before the inventory's sysctl and runbook 003.
  h.File(kSysctl,
         "net.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1\n"
         "net.ipv4.ip_forward = 1\nnet.ipv4.tcp_keepalive_time = 600\nvm.overcommit_memory = 1\n"
         "vm.swappiness = 0\nkernel.shmmax = 17179869184\n");
  const auto run = h.Probe("os.sysctl", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, std::string(kSysctl) +
                         ": vm.swappiness = 0 (want 10), net.core.rmem_max missing, "
                         "net.core.wmem_max missing, net.ipv4.tcp_rmem missing, net.ipv4.tcp_wmem "
                         "missing, net.core.somaxconn missing, kernel.shmmax = 17179869184 (not "
                         "wanted)\n");
}

TEST_F(TuningStepsTest, SysctlBuffersOnlyOnGpuAndRdmaNodes) {
  // master1 has neither: the catalog's six and the cluster's swappiness.
  h.File(kSysctl, FileOf({kWorkerWant.begin(), kWorkerWant.begin() + 6}));
  for (auto it = kWorkerWant.begin(); it != kWorkerWant.begin() + 6; ++it) {
    h.File(ProcPath(it->first), it->second + "\n");
  }
  const auto run = h.Probe("os.sysctl", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(TuningStepsTest, SysctlComparesLiveValuesWordByWord) {
  h.File(kSysctl, FileOf(kWorkerWant));
  Live();
  const auto ok = h.Probe("os.sysctl", "worker1");
  EXPECT_EQ(ok.status, 0) << ok.out;
  // Another file under /etc/sysctl.d won at boot, or someone ran sysctl -w.
  Live({{"net.core.rmem_max", "212992"}, {"net.ipv4.tcp_rmem", "4096 131072 6291456"}});
  const auto run = h.Probe("os.sysctl", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "live values differ: net.core.rmem_max is 212992 (want 134217728), net.ipv4.tcp_rmem "
            "is 4096 131072 6291456 (want 4096 87380 134217728)\n");
}

// A GPU node of an Ethernet-only (TCP or RoCE without RDMA ports listed)
// cluster, and IB nodes that name their compute network.
std::string NcclInventory(const std::string& node_keys) {
  return "cluster: t\nnodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: w\n    address: 10.20.1.11\n    os: ubuntu-22.04\n    roles: [worker]\n" +
         node_keys + "    hardware:\n      gpus: {model: H100, count: 8}\n";
}

TEST_F(TuningStepsTest, MemlockNamesTheFileTheManagerAndAFreshSession) {
  const std::string limits = "/etc/security/limits.d/90-gpuctl-memlock.conf";
  const std::string manager = "/etc/systemd/system.conf.d/90-gpuctl-memlock.conf";
  h.Stub("systemctl", "echo 8388608");
  auto r = h.Probe("os.memlock", "worker1");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, limits + " is missing or differs\n");
  h.File(limits,
         "# Written by gpuctl (os.memlock): RDMA and NCCL pin the memory they move; edits are "
         "replaced.\n* soft memlock unlimited\n* hard memlock unlimited\n"
         "root soft memlock unlimited\nroot hard memlock unlimited\n");
  EXPECT_EQ(h.Probe("os.memlock", "worker1").out, manager + " is missing or differs\n");
  h.File(manager,
         "# Written by gpuctl (os.memlock): services may pin memory (RDMA); edits are "
         "replaced.\n[Manager]\nDefaultLimitMEMLOCK=infinity\n");
  EXPECT_EQ(h.Probe("os.memlock", "worker1").out,
            "systemd's DefaultLimitMEMLOCK is 8388608 (want infinity; systemd reads " + manager +
                " when it re-executes)\n");
  h.Stub("systemctl", "echo infinity");
  EXPECT_EQ(h.Probe("os.memlock", "worker1").status, 0);
  // A PAM stack without pam_limits: the files are there, a login would not
  // get them.
  h.File("/proc/1/status", "Name:\tsystemd\nCapBnd:\t000001ffffffffff\n");
  h.Stub("runuser", "echo 8192");
  r = h.Verify("os.memlock", "worker1");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            "a new session's locked-memory limit is 8192 (want unlimited): pam_limits does "
            "not read " +
                limits + "\n");
  h.Stub("runuser", "echo unlimited");
  EXPECT_EQ(h.Verify("os.memlock", "worker1").status, 0);
  // Without CAP_SYS_RESOURCE (bit 24) no session can raise the limit: the
  // files and systemd's default are what is checked.
  h.File("/proc/1/status", "Name:\tsystemd\nCapBnd:\t000001fffeffffff\n");
  h.Stub("runuser", "echo 8192");
  EXPECT_EQ(h.Verify("os.memlock", "worker1").status, 0);
}

TEST(MemlockTuning, OnlyNodesWithGpusOrRdmaPorts) {
  StepHarness h(kTuningInventory);
  const Step* step = h.catalog().Find("os.memlock");
  ASSERT_NE(step, nullptr);
  EXPECT_FALSE(step->AppliesTo(*h.inventory().Find("master1"), h.inventory()));
  EXPECT_TRUE(step->AppliesTo(*h.inventory().Find("worker1"), h.inventory()));
}

TEST(NcclEnvTuning, EthernetOnlyNodeGetsSocketsOnTheComputeInterface) {
  StepHarness h(NcclInventory("    compute_interface: ens2f0\n"));
  const auto run = h.Probe("ib.nccl-env", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "/etc/nccl.conf is missing or differs (want NCCL_IB_DISABLE=1 "
            "NCCL_SOCKET_IFNAME=ens2f0)\n");
}

TEST(NcclEnvTuning, TheInterfaceHoldingIbAddressElseTheManagementOneSayingWhy) {
  const std::string ib = "    ib_address: 10.10.0.11\n";
  StepHarness h(NcclInventory(ib) + "      ib: [{device: mlx5_0, port: 1, rate: 400}]\n");
  h.Stub("ip", "case \"$*\" in *'addr show to 10.10.0.11'*) cat '" +
                   StepHarness::Fixture("ip/addr-show-to-ib0.txt") +
                   "' ;; *'addr show to 10.20.1.11'*) cat '" +
                   StepHarness::Fixture("ip/addr-show-to.txt") + "' ;; esac");
  EXPECT_EQ(h.Probe("ib.nccl-env", "w").out,
            "/etc/nccl.conf is missing or differs (want NCCL_IB_HCA=mlx5_0:1 "
            "NCCL_SOCKET_IFNAME=ib0)\n");

  // IPoIB down (or the address only names the node in /etc/hosts).
  h.Stub("ip", "case \"$*\" in *'addr show to 10.20.1.11'*) cat '" +
                   StepHarness::Fixture("ip/addr-show-to.txt") + "' ;; esac");
  EXPECT_EQ(h.Probe("ib.nccl-env", "w").out,
            "/etc/nccl.conf is missing or differs (want NCCL_IB_HCA=mlx5_0:1 "
            "NCCL_SOCKET_IFNAME=ens10f0)\n");
  if (!StepHarness::CanFakeFiles().empty()) return;
  h.File("/etc/nccl.conf",
         "# Written by gpuctl (ib.nccl-env). A job's own environment overrides these.\n"
         "# no interface holds ib_address 10.10.0.11: the management address's is used\n"
         "NCCL_IB_HCA=mlx5_0:1\nNCCL_SOCKET_IFNAME=ens10f0\n");
  const auto run = h.Probe("ib.nccl-env", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(NcclEnvTuning, VerifyRefusesAComputeInterfaceThatDoesNotHoldIbAddress) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(NcclInventory("    ib_address: 10.10.0.11\n    compute_interface: ens2f0\n"));
  h.Stub("ip", "case \"$*\" in *'addr show to 10.10.0.11'*) cat '" +
                   StepHarness::Fixture("ip/addr-show-to-ib0.txt") +
                   "' ;; *'link show dev ens2f0'*) exit 0 ;; *) exit 1 ;; esac");
  h.File("/etc/nccl.conf", "NCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME=ens2f0\n");
  auto run = h.Verify("ib.nccl-env", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "/etc/nccl.conf: NCCL_SOCKET_IFNAME=ens2f0, but ib_address 10.10.0.11 is on ib0\n");
  // An Ethernet-only node's file must keep NCCL off RDMA.
  h.File("/etc/nccl.conf", "NCCL_SOCKET_IFNAME=ens2f0\n");
  run = h.Verify("ib.nccl-env", "w");
  EXPECT_EQ(run.out,
            "/etc/nccl.conf: NCCL_IB_DISABLE= (want 1: the inventory lists no RDMA port)\n");
}

}  // namespace
}  // namespace gpuctl
