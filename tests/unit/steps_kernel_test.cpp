// The kernel steps (playbooks/35-kernel.yaml): which kernel boots next
// (grubby on dnf nodes, the newest /boot/vmlinuz-* on apt nodes), what that
// kernel lacks of the running one's DKMS modules (dkms status lines in the
// slash form of DKMS 2.8.6 and later, Ubuntu 22.04's and EL9's, and the comma
// form of earlier ones, Ubuntu 20.04's; tests/fixtures/dkms/), how the
// modules are built, and which kernel packages are held.
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::Slurp;
using testing::StepHarness;

constexpr const char* kRockyRunning = "5.14.0-427.13.1.el9_4.x86_64";
constexpr const char* kRockyNext = "5.14.0-503.22.1.el9_5.x86_64";

std::string KernelInventory(const std::string& os, const std::string& hardware,
                            const std::string& policy = "") {
  return "cluster: t\nversions: {driver_branch: \"550\"}\n" + policy +
         "nodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: w\n    address: 198.18.0.2\n    os: " +
         os + "\n    roles: [worker]\n    hardware: " + hardware + "\n";
}
const char* kGpus = "{gpus: {model: H100, count: 8}}";

// A Rocky GPU node running kRockyRunning whose boot loader defaults to `next`.
void RockyNode(StepHarness& h, const std::string& next) {
  h.StubOutput("uname", std::string(kRockyRunning) + "\n");
  h.StubOutput("grubby", "/boot/vmlinuz-" + next + "\n");
}

TEST(KernelSteps, ModulesAreFineWhileTheRunningKernelBootsNext) {
  StepHarness h(KernelInventory("rocky-9", kGpus));
  RockyNode(h, kRockyRunning);
  // Not even asked: nothing else boots.
  h.StubOutput("dkms", "dkms must not run\n", 9);
  const auto run = h.Probe("kernel.modules", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(KernelSteps, ANextKernelWithoutTheDriversDkmsModuleIsFlagged) {
  StepHarness h(KernelInventory("rocky-9", kGpus));
  RockyNode(h, kRockyNext);
  h.StubFixture("dkms", "dkms/status-3-running-only.txt");
  const auto run = h.Probe("kernel.modules", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            std::string("kernel ") + kRockyNext + " boots next (running " + kRockyRunning +
                ") and lacks nvidia/550.54.14: the next reboot would come up without it\n");
}

TEST(KernelSteps, ANextKernelWithTheModulesBuiltPasses) {
  StepHarness h(KernelInventory("rocky-9", kGpus));
  RockyNode(h, kRockyNext);
  // dkms 3 appends a warning to a module it installed over another.
  h.StubFixture("dkms", "dkms/status-3-both-kernels.txt");
  h.StubOutput("find", std::string("/lib/modules/") + kRockyNext + "/extra/nvidia.ko.xz\n");
  const auto run = h.Probe("kernel.modules", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(KernelSteps, WithoutDkmsAGpuNodeStillNeedsAnNvidiaModuleForTheNextKernel) {
  StepHarness h(KernelInventory("rocky-9", kGpus));
  RockyNode(h, kRockyNext);
  // A precompiled driver: no dkms on the node, and nothing for that kernel.
  h.StubOutput("find", "");
  auto run = h.Probe("kernel.modules", "w");
  if (run.out.find("lacks nvidia/") != std::string::npos) {
    GTEST_SKIP() << "this machine has a dkms of its own on PATH";
  }
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find(" and lacks nvidia: "), std::string::npos) << run.out;

  // The precompiled package for that kernel ships it.
  h.StubOutput("find", std::string("/lib/modules/") + kRockyNext + "/extra/nvidia/nvidia.ko\n");
  run = h.Probe("kernel.modules", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(KernelSteps, ReadsOldDkmsLinesAndTheNewestBootKernelOnUbuntu) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  // An IB worker: OFED's DKMS module counts as much as the driver's.
  StepHarness h(
      KernelInventory("ubuntu-22.04", "{gpus: {model: H100, count: 8}, ib: [{device: mlx5_0}]}"));
  h.StubOutput("uname", "5.15.0-105-generic\n");
  h.File("/boot/vmlinuz-5.15.0-105-generic", "");
  h.File("/boot/vmlinuz-5.15.0-131-generic", "");
  // 9 sorts after 131 as text, not as a version.
  h.File("/boot/vmlinuz-5.15.0-9-generic", "");
  h.StubFixture("dkms", "dkms/status-comma-new-kernel-lacks-ofed.txt");
  const auto run = h.Probe("kernel.modules", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "kernel 5.15.0-131-generic boots next (running 5.15.0-105-generic) and lacks "
            "mlnx-ofed-kernel/24.01.OFED.24.01.0.3.3.1: the next reboot would come up without "
            "it\n");
}

TEST(KernelSteps, OneKernelInBootIsTheOneThatBootsNext) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(KernelInventory("ubuntu-22.04", kGpus));
  h.StubOutput("uname", "5.15.0-105-generic\n");
  // The running kernel's image is gone from /boot (removed, or never there
  // on a netbooted node): the one left boots next, older or not.
  h.File("/boot/vmlinuz-5.15.0-91-generic", "");
  h.StubOutput("dkms", "nvidia/550.54.14, 5.15.0-105-generic, x86_64: installed\n");
  const auto run = h.Probe("kernel.modules", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("kernel 5.15.0-91-generic boots next (running 5.15.0-105-generic)"),
            std::string::npos)
      << run.out;
}

TEST(KernelSteps, TheChangeInstallsTheNextKernelsHeadersThenBuildsForIt) {
  StepHarness h(KernelInventory("rocky-9", kGpus));
  RockyNode(h, kRockyNext);
  h.SetEnv("CALLS", (h.dir() / "calls").string());
  h.Stub("dnf", "echo \"dnf $*\" >>\"$CALLS\"");
  h.Stub("rpm", "exit 1");
  h.Stub("dkms", "echo \"dkms $*\" >>\"$CALLS\"");
  const auto run = h.Change("kernel.modules", "w");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(Slurp(h.dir() / "calls"),
            std::string("dnf -y -q install --disableexcludes=main kernel-devel-") + kRockyNext +
                "\ndkms autoinstall -k " + kRockyNext + "\n");
}

TEST(KernelSteps, AFailedBuildFailsTheChangeWithDkmsOwnWords) {
  StepHarness h(KernelInventory("rocky-9", kGpus));
  RockyNode(h, kRockyNext);
  h.Stub("dnf", "exit 0");
  h.Stub("rpm", "exit 1");
  h.Stub("dkms",
         "echo 'Error! Bad return status for module build on kernel: 5.14.0-503.22.1.el9_5.x86_64 "
         "(x86_64)' >&2\nexit 10");
  const auto run = h.Change("kernel.modules", "w");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.out.find("Bad return status for module build"), std::string::npos) << run.out;
}

TEST(KernelSteps, HoldNamesTheUnheldKernelPackagesAndUnattendedUpgrades) {
  StepHarness h(KernelInventory("ubuntu-22.04", kGpus));
  h.Stub("dpkg-query",
         "case \"$*\" in\n"
         "  *linux-image-*) printf '%s\\n' 'hi  linux-image-5.15.0-105-generic' "
         "'ii  linux-image-generic' 'ii  linux-headers-generic' "
         "'un  linux-image-unsigned-5.15.0-105-generic' 'hi  linux-modules-5.15.0-105-generic' ;;\n"
         "  *unattended-upgrades*) printf 'install ok installed' ;;\n"
         "  *) exit 1 ;;\n"
         "esac");
  h.StubOutput("apt-config", "APT::Periodic::Unattended-Upgrade \"1\";\n");
  auto run = h.Probe("kernel.hold", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "not held: linux-image-generic linux-headers-generic (unattended-upgrades runs "
            "daily)\n");

  h.SetEnv("CALLS", (h.dir() / "calls").string());
  h.Stub("apt-mark", "echo \"apt-mark $*\" >>\"$CALLS\"");
  ASSERT_EQ(h.Change("kernel.hold", "w").status, 0);
  EXPECT_EQ(Slurp(h.dir() / "calls"), "apt-mark hold linux-image-generic linux-headers-generic\n");
}

TEST(KernelSteps, HoldIsDoneWithEverythingHeldOrNothingToHold) {
  StepHarness h(KernelInventory("ubuntu-22.04", kGpus));
  h.Stub("nvidia-smi", "exit 0");  // the driver is installed
  h.StubOutput("dpkg-query", "hi  linux-image-generic\nhi  linux-image-5.15.0-105-generic\n");
  EXPECT_EQ(h.Probe("kernel.hold", "w").status, 0);
  // A node with no kernel package (a container, a kernel built by hand).
  h.StubOutput("dpkg-query", "", 1);
  EXPECT_EQ(h.Probe("kernel.hold", "w").status, 0);
}

TEST(KernelSteps, OnAGpuNodeWithoutTheDriverWhatToHoldIsKnownAfterIt) {
  // Nothing to hold yet, no driver and no headers for the running kernel
  // (one this machine has no /lib/modules for): gpu.driver will install
  // them, so the hold is known after it has run.
  StepHarness h(KernelInventory("ubuntu-22.04", kGpus));
  h.SetEnv("GPUCTL_FACT_KERNEL", "5.15.0-200-generic");
  h.StubOutput("dpkg-query", "", 1);
  const auto run = h.Probe("kernel.hold", "w");
  EXPECT_EQ(run.status, 3);
  EXPECT_EQ(run.out, "the running kernel's headers come with the NVIDIA driver (gpu.driver)\n");
}

TEST(KernelSteps, HoldOnDnfLocksTheKernelsNames) {
  StepHarness h(KernelInventory("rocky-9", kGpus));
  // rpm -qa: a line per installed package, two kernels installed.
  h.StubOutput("rpm", "kernel\nkernel-core\nkernel-core\nkernel-modules\n");
  h.StubOutput("systemctl", "", 1);
  const auto run = h.Probe("kernel.hold", "w");
  if (run.status == 0) GTEST_SKIP() << "this machine's dnf configuration holds kernels already";
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "not held: kernel kernel-core kernel-modules\n");
}

TEST(KernelSteps, NeitherStepAppliesWithoutGpusOrIbAndTheHoldCanBeTurnedOff) {
  // Whether `step` applies to the worker of an inventory.
  const auto applies = [](const std::string& inventory, const std::string& step) {
    StepHarness h(inventory);
    return h.catalog().Find(step)->AppliesTo(h.inventory().nodes[1], h.inventory());
  };
  const std::string plain = KernelInventory("ubuntu-22.04", "{}");
  EXPECT_FALSE(applies(plain, "kernel.modules"));
  EXPECT_FALSE(applies(plain, "kernel.hold"));

  const std::string ib = KernelInventory("ubuntu-22.04", "{ib: [{device: mlx5_0}]}");
  EXPECT_TRUE(applies(ib, "kernel.modules"));
  EXPECT_TRUE(applies(ib, "kernel.hold"));

  const std::string off = KernelInventory("ubuntu-22.04", kGpus, "policy: {hold_kernel: false}\n");
  EXPECT_TRUE(applies(off, "kernel.modules"));
  EXPECT_FALSE(applies(off, "kernel.hold"));
}

}  // namespace
}  // namespace gpuctl
