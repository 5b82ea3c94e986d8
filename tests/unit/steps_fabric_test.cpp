// The fabric steps (playbooks/30-fabric.yaml): ib.ofed's verification reads
// ibstat's port blocks (tests/fixtures/ib/) and names the first port that is
// not Active at the inventory's rate; ib.nccl-env finds the management
// interface from iproute2's answers (tests/fixtures/ip/).
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

std::string FabricInventory(const std::string& ports, const std::string& address = "198.18.0.2") {
  return "cluster: t\nnodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: w\n    address: " +
         address +
         "\n    os: ubuntu-22.04\n    roles: [worker]\n"
         "    hardware:\n      gpus: {model: H100, count: 8}\n      ib: [" +
         ports + "]\n";
}

const char* kTwoPorts =
    "{device: mlx5_0, port: 1, rate: 200}, {device: mlx5_1, port: 1, rate: 200}";

class OfedVerify : public ::testing::Test {
 protected:
  // mlnx-ofed-all at `release`; openibd installed and enabled unless told.
  static void Node(StepHarness& h, const std::string& ibstat, const std::string& release,
                   int openibd_enabled = 0) {
    h.StubOutput("dpkg-query", release);
    h.Stub("systemctl", "case \"$1\" in cat) exit 0 ;; is-enabled) exit " +
                            std::to_string(openibd_enabled) + " ;; esac\nexit 1");
    h.StubFixture("ibstat", ibstat);
  }
};

TEST_F(OfedVerify, PassesWhenEveryPortIsActiveAtItsRate) {
  StepHarness h(FabricInventory(kTwoPorts));
  Node(h, "ib/ibstat-2port-active.txt", "24.01-0.3.3.1");
  const auto run = h.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(OfedVerify, NamesTheDownPort) {
  StepHarness h(FabricInventory(kTwoPorts));
  Node(h, "ib/ibstat-mlx5_1-down.txt", "24.01-0.3.3.1");
  const auto run = h.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "mlx5_1 port 1: State Down (want Active)\n");
}

TEST_F(OfedVerify, NamesAPortAtTheWrongRate) {
  StepHarness h(FabricInventory(kTwoPorts));
  Node(h, "ib/ibstat-mlx5_1-rate-100.txt", "24.01-0.3.3.1");
  const auto run = h.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "mlx5_1 port 1: rate 100 (want 200)\n");
}

TEST_F(OfedVerify, ReadsEachPortOfADualPortAdapter) {
  StepHarness h(FabricInventory(
      "{device: mlx5_0, port: 1, rate: 200}, {device: mlx5_0, port: 2, rate: 200}"));
  Node(h, "ib/ibstat-dual-port-and-roce.txt", "24.01-0.3.3.1");
  EXPECT_EQ(h.Verify("ib.ofed", "w").status, 0);

  StepHarness missing(FabricInventory(kTwoPorts));
  Node(missing, "ib/ibstat-dual-port-and-roce.txt", "24.01-0.3.3.1");
  const auto run = missing.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "mlx5_1 port 1: not shown by ibstat\n");
}

TEST_F(OfedVerify, NamesTheReleaseOpenibdAndAFailingIbstat) {
  StepHarness h(FabricInventory(kTwoPorts));
  Node(h, "ib/ibstat-2port-active.txt", "23.10-2.1.3.1");
  auto run = h.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "mlnx-ofed-all is 23.10-2.1.3.1 (want 24.01)\n");

  Node(h, "ib/ibstat-2port-active.txt", "24.01-0.3.3.1", /*openibd_enabled=*/1);
  run = h.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "openibd is not enabled at boot\n");
  EXPECT_EQ(h.Probe("ib.ofed", "w").out, "openibd is not enabled at boot\n");

  Node(h, "ib/ibstat-2port-active.txt", "24.01-0.3.3.1");
  h.StubOutput(
      "ibstat",
      "ibpanic: [4242] main: stat of IB device 'mlx5_0' failed: No such file or directory\n", 255);
  run = h.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "ibstat fails: ibpanic: [4242] main: stat of IB device 'mlx5_0' failed: No such file "
            "or directory\n");
}

// w (two ports) and a peer p on its fabric; `sm` names fabric.subnet_manager
// ("" : the switches run the subnet manager).
std::string SmInventory(const std::string& sm) {
  std::string text = FabricInventory(kTwoPorts) +
                     "  - name: p\n    address: 198.18.0.3\n    os: ubuntu-22.04\n"
                     "    roles: [worker]\n    hardware:\n"
                     "      ib: [{device: mlx5_0, port: 1, rate: 200}]\n";
  return sm.empty() ? text : text + "fabric:\n  subnet_manager: " + sm + "\n";
}

TEST_F(OfedVerify, AnInitializingPortNamesTheMissingSubnetManager) {
  StepHarness h(SmInventory(""));
  Node(h, "ib/ibstat-2port-initializing.txt", "24.01-0.3.3.1");
  EXPECT_EQ(h.Probe("ib.ofed", "w").status, 0) << "no subnet manager to wait for";
  const auto run = h.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "mlx5_0 port 1: State Initializing: no subnet manager answers on its fabric (enable "
            "the switches' subnet manager, or name a node in fabric.subnet_manager to run "
            "OpenSM)\n");
}

TEST_F(OfedVerify, WithASubnetManagerNamedItWaitsForItsOpenSm) {
  StepHarness h(SmInventory("p"));
  Node(h, "ib/ibstat-2port-initializing.txt", "24.01-0.3.3.1");
  const auto probe = h.Probe("ib.ofed", "w");
  EXPECT_EQ(probe.status, 3) << "known after ib.subnet-manager runs on p";
  EXPECT_EQ(probe.out,
            "mlx5_0 port 1: State Initializing: no subnet manager answers on its fabric yet "
            "(OpenSM on p)\n");
  const auto run = h.Verify("ib.ofed", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "mlx5_0 port 1: State Initializing: no subnet manager answers on its fabric "
            "(fabric.subnet_manager: p; is OpenSM running there?)\n");

  // On the subnet manager itself its own OpenSM, next, brings the ports up
  // and checks them.
  StepHarness own(SmInventory("w"));
  Node(own, "ib/ibstat-2port-initializing.txt", "24.01-0.3.3.1");
  EXPECT_EQ(own.Probe("ib.ofed", "w").status, 0);
  const auto own_run = own.Verify("ib.ofed", "w");
  EXPECT_EQ(own_run.status, 0) << own_run.out;
}

TEST(SubnetManager, ProbeSaysWhatIsMissing) {
  StepHarness h(SmInventory("w"));
  h.Stub("dpkg-query", "exit 1");
  const auto run = h.Probe("ib.subnet-manager", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("opensm"), std::string::npos) << run.out;
}

TEST(Peermem, ProbeWantsItListedForBootAndLoaded) {
  StepHarness h(FabricInventory(kTwoPorts));
  auto run = h.Probe("gpu.peermem", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "/etc/modules-load.d/gpuctl-peermem.conf is missing or differs: nvidia-peermem would "
            "not load at boot\n");
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  h.File("/etc/modules-load.d/gpuctl-peermem.conf", "nvidia-peermem\n");
  h.StubOutput("lsmod", "Module                  Size  Used by\nnvidia_uvm           4956160  0\n");
  run = h.Probe("gpu.peermem", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "nvidia_peermem is not loaded (lsmod): NCCL falls back to staging GPU data through "
            "host memory\n");
  h.StubOutput("lsmod",
               "Module                  Size  Used by\nnvidia_peermem         16384  0\n"
               "nvidia_uvm           4956160  0\n");
  run = h.Probe("gpu.peermem", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(NcclEnv, SocketInterfaceIsTheOneHoldingTheNodeAddress) {
  StepHarness h(FabricInventory(kTwoPorts, "10.20.1.11"));
  h.Stub("ip", "case \"$*\" in *'addr show to 10.20.1.11'*) cat '" +
                   StepHarness::Fixture("ip/addr-show-to.txt") + "' ;; esac");
  const auto run = h.Probe("ib.nccl-env", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "/etc/nccl.conf is missing or differs (want NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 "
            "NCCL_SOCKET_IFNAME=ens10f0)\n");
}

TEST(NcclEnv, SocketInterfaceFallsBackToTheRoute) {
  // Reached through NAT: no interface holds the address; the route names one.
  StepHarness h(FabricInventory("{device: mlx5_2, port: 1, rate: 400}", "10.20.1.11"));
  h.Stub("ip", "case \"$*\" in *'route get 10.20.1.11'*) cat '" +
                   StepHarness::Fixture("ip/route-get.txt") + "' ;; esac");
  const auto run = h.Probe("ib.nccl-env", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "/etc/nccl.conf is missing or differs (want NCCL_IB_HCA=mlx5_2:1 "
            "NCCL_SOCKET_IFNAME=bond0)\n");

  h.Stub("ip", "exit 0");
  EXPECT_EQ(h.Probe("ib.nccl-env", "w").out, "no interface holds or routes 10.20.1.11\n");
}

// dpkg-query as ib.ofed-hold's probe asks it: mlnx-ofed-all's version, and
// OFED's installed packages with their selection (hi: held).
std::string OfedPackages(const std::string& version, const std::string& lines) {
  return "case \"$*\" in\n"
         "  *Status-Abbrev*) printf '%s\\n' " +
         lines +
         " ;;\n"
         "  *mlnx-ofed-all*) printf '" +
         version +
         "' ;;\n"
         "  *) exit 1 ;;\n"
         "esac";
}

TEST(OfedHold, NamesOfedsUnheldPackagesAndHoldsThem) {
  StepHarness h(FabricInventory(kTwoPorts));
  h.SetEnv("CALLS", (h.dir() / "calls").string());
  h.Stub("dpkg-query", OfedPackages("24.01-0.3.3.1",
                                    "'ii  mlnx-ofed-all' "
                                    "'ii  mlnx-ofed-kernel-dkms' "
                                    "'hi  knem-dkms' 'un  mlnx-nvme-dkms'"));
  auto run = h.Probe("ib.ofed-hold", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "not held: mlnx-ofed-all mlnx-ofed-kernel-dkms\n");

  h.Stub("apt-mark", "echo \"apt-mark $*\" >>\"$CALLS\"");
  ASSERT_EQ(h.Change("ib.ofed-hold", "w").status, 0);
  EXPECT_EQ(testing::Slurp(h.dir() / "calls"),
            "apt-mark hold mlnx-ofed-all mlnx-ofed-kernel-dkms\n");

  h.Stub("dpkg-query", OfedPackages("24.01-0.3.3.1", "'hi  mlnx-ofed-all' 'hi  knem-dkms'"));
  EXPECT_EQ(h.Probe("ib.ofed-hold", "w").status, 0);
}

TEST(OfedHold, WaitsWhileOfedIsNotAtTheInventorysRelease) {
  StepHarness h(FabricInventory(kTwoPorts));
  // The default release is 24.01; 23.10 is about to be replaced by ib.ofed.
  h.Stub("dpkg-query", OfedPackages("23.10-2.1.3.1", "'ii  mlnx-ofed-all'"));
  const auto run = h.Probe("ib.ofed-hold", "w");
  EXPECT_EQ(run.status, 3);
  EXPECT_EQ(run.out, "mlnx-ofed-all is not at 24.01 yet\n");
}

}  // namespace
}  // namespace gpuctl
