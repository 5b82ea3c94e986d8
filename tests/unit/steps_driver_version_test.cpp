// gpu.driver with an exact release in the inventory (versions.driver:
// "580.159.04") against the node tools' real output: nvidia-smi from a real
// H100 capture (driver 580.159.04), dpkg and rpm versions as Ubuntu's
// archive and NVIDIA's RHEL repository number them, and apt-cache's real
// show and madison formats (tests/fixtures/apt/). A branch alone keeps
// today's behaviour; a release is probed, pinned and verified exactly.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::Slurp;
using testing::StepHarness;

std::string DriverVersionInventory(const std::string& driver) {
  return "cluster: t\nversions: {driver: \"" + driver +
         "\", cuda: \"12.4\"}\nnodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: u\n    address: 198.18.0.2\n    os: ubuntu-22.04\n    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 1}}\n"
         "  - name: r\n    address: 198.18.0.3\n    os: rocky-9\n    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 1}}\n";
}

constexpr const char* kKernel = "5.14.0-427.13.1.el9_4.x86_64";

// Where `first` and `second` are in `text`, `first` comes before `second`.
::testing::AssertionResult InOrder(const std::string& text, const std::string& first,
                                   const std::string& second) {
  const auto a = text.find(first);
  const auto b = text.find(second);
  if (a == std::string::npos || b == std::string::npos || a > b) {
    return ::testing::AssertionFailure()
           << "want \"" << first << "\" before \"" << second << "\" in\n"
           << text;
  }
  return ::testing::AssertionSuccess();
}

class DriverVersionStepTest : public ::testing::Test {
 protected:
  // The H100 capture's nvidia-smi (driver 580.159.04, one GPU), and the
  // driver metapackage installed at VERSION on both families.
  static void Node(StepHarness& h, const std::string& version) {
    h.UseStub("nvidia-smi");
    // A running kernel without headers (this machine has no /lib/modules
    // for it): the change installs them before the driver.
    h.SetEnv("GPUCTL_FACT_KERNEL", kKernel);
    h.SetEnv("STUB_CSV", StepHarness::Fixture("nvidia-smi/h100-80gb-hbm3/query_csv.txt"));
    h.SetEnv("CALLS", (h.dir() / "calls").string());
    h.Stub("dpkg-query",
           "case \"$*\" in *Status*) printf 'install ok installed' ;; *) printf '%s' '" + version +
               "' ;; esac");
    h.Stub("rpm", "case \"$*\" in *--qf*) printf '%s' '" + version + "' ;; esac\nexit 0");
    // Ubuntu's archive has both releases (madison's format), so the
    // preflight lets the probe say what it saw.
    h.Stub("apt-cache",
           "[ \"$1\" = madison ] && for v in 580.159.04 580.95.05; do printf '%s | "
           "%s-0ubuntu0.22.04.1 | http://archive.ubuntu.com/ubuntu jammy-updates/restricted amd64 "
           "Packages\\n' \"$2\" \"$v\"; done");
  }
};

TEST_F(DriverVersionStepTest, ProbeWantsExactlyTheRelease) {
  StepHarness h(DriverVersionInventory("580.159.04"));
  Node(h, "580.95.05-0ubuntu0.22.04.1");
  auto run = h.Probe("gpu.driver", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "nvidia-driver-580 580.95.05-0ubuntu0.22.04.1 is installed, want 580.159.04\n");

  Node(h, "580.159.04-0ubuntu0.22.04.1");
  run = h.Probe("gpu.driver", "u");
  EXPECT_EQ(run.status, 0) << run.out;

  // NVIDIA's rpm of that release (cuda-drivers-580-580.159.04-1).
  Node(h, "580.159.04-1");
  run = h.Probe("gpu.driver", "r");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(DriverVersionStepTest, ProbeNamesAnotherLoadedRelease) {
  // Installed as asked, but the module loaded is still the branch's newer one.
  StepHarness h(DriverVersionInventory("580.95.05"));
  Node(h, "580.95.05-1");
  const auto run = h.Probe("gpu.driver", "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "driver 580.159.04 is loaded, want 580.95.05 (reboot pending?)\n");
}

TEST_F(DriverVersionStepTest, ABranchTakesAnyReleaseOfIt) {
  StepHarness h(DriverVersionInventory("580"));
  Node(h, "580.95.05-0ubuntu0.22.04.1");
  EXPECT_EQ(h.Probe("gpu.driver", "u").status, 0);
  EXPECT_EQ(h.Verify("gpu.driver", "u").status, 0);
}

TEST_F(DriverVersionStepTest, VerifyChecksNvidiaSmiAndThePackage) {
  StepHarness h(DriverVersionInventory("580.159.04"));
  Node(h, "580.159.04-1");
  auto run = h.Verify("gpu.driver", "r");
  EXPECT_EQ(run.status, 0) << run.out;

  Node(h, "580.95.05-1");
  run = h.Verify("gpu.driver", "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "cuda-drivers-580 580.95.05-1 is installed, want 580.159.04\n");

  StepHarness other(DriverVersionInventory("580.95.05"));
  Node(other, "580.95.05-1");
  run = other.Verify("gpu.driver", "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("1 GPU(s) differ from 'NVIDIA H100 80GB HBM3' on 580.95.05: "
                         "NVIDIA H100 80GB HBM3, 580.159.04"),
            std::string::npos)
      << run.out;
}

TEST_F(DriverVersionStepTest, TheHoldWaitsForTheExactRelease) {
  // gpu.driver releases the holds to move to the release: the hold step is
  // known only after it, not found done on the old release's holds.
  StepHarness h(DriverVersionInventory("580.95.05"));
  Node(h, "580.159.04-0ubuntu0.22.04.1");
  const auto run = h.Probe("gpu.driver-hold", "u");
  EXPECT_EQ(run.status, 3) << run.out;
  EXPECT_EQ(run.out, "nvidia-driver-580 is not at 580.95.05 yet\n");
}

TEST_F(DriverVersionStepTest, AptPinsEveryPackageOfTheReleaseAndMayDowngrade) {
  // Installed: the branch's newer release; the archive also has 550.54.15,
  // whose metapackage (a real control file) pins its dependencies with "="
  // and, for the module, "<= V-1".
  StepHarness h(DriverVersionInventory("550.54.15"));
  Node(h, "550.127.05-0ubuntu1");
  const std::string show = StepHarness::Fixture("apt/apt-cache-show-nvidia-driver-550.txt");
  h.Stub("apt-cache",
         "case \"$1 $2\" in\n"
         "  'madison nvidia-driver-550') cat '" +
             StepHarness::Fixture("apt/apt-cache-madison-nvidia-driver-550.txt") +
             "' ;;\n"
             "  'show nvidia-driver-550=550.54.15-0ubuntu1') cat '" +
             show +
             "' ;;\n"
             // Every package of the driver's source has the release; others not,
             // and apt-cache says so on stderr yet exits 0, as the real one does.
             "  'show '*-550=550.54.15-0ubuntu1) printf 'Package: %s\\nVersion: %s\\n' "
             "\"${2%%=*}\" \"${2#*=}\" ;;\n"
             "  *) echo \"E: Version '${2#*=}' for '${2%%=*}' was not found\" >&2; exit 0 "
             ";;\nesac");
  h.Stub("apt-mark", "echo \"apt-mark $*\" >>\"$CALLS\"");
  h.Stub("apt-get", "echo \"apt-get $*\" >>\"$CALLS\"");
  h.Stub("dpkg", "exit 0");
  const auto run = h.Change("gpu.driver", "u");
  ASSERT_EQ(run.status, 0) << run.out;
  // The running kernel's headers first, for the driver's DKMS build.
  EXPECT_TRUE(InOrder(Slurp(h.dir() / "calls"),
                      std::string(" install linux-headers-") + kKernel + "\n",
                      " install --allow-downgrades nvidia-driver-550"));
  const std::string v = "=550.54.15-0ubuntu1";
  EXPECT_NE(
      Slurp(h.dir() / "calls")
          .find(" install --allow-downgrades nvidia-driver-550" + v + " libnvidia-cfg1-550" + v +
                " libnvidia-compute-550" + v + " libnvidia-decode-550" + v +
                " libnvidia-encode-550" + v + " libnvidia-extra-550" + v + " libnvidia-fbc1-550" +
                v + " libnvidia-gl-550" + v + " nvidia-compute-utils-550" + v + " nvidia-dkms-550" +
                v + " nvidia-kernel-common-550" + v + " nvidia-kernel-source-550" + v +
                " nvidia-utils-550" + v + " xserver-xorg-video-nvidia-550" + v + "\n"),
      std::string::npos)
      << Slurp(h.dir() / "calls");
}

TEST_F(DriverVersionStepTest, AptNamesAReleaseTheArchiveLacks) {
  StepHarness h(DriverVersionInventory("550.40.07"));
  Node(h, "");
  h.StubFixture("apt-cache", "apt/apt-cache-madison-nvidia-driver-550.txt");
  h.Stub("apt-mark", "exit 0");
  const auto run = h.Change("gpu.driver", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("no nvidia-driver-550 550.40.07 in the node's repositories; they have: "
                         "550.127.05-0ubuntu1 550.54.15-0ubuntu1 550.54.14-0ubuntu0.22.04.1"),
            std::string::npos)
      << run.out;
}

TEST_F(DriverVersionStepTest, DnfInstallsTheReleasesBranchMetapackage) {
  // NVIDIA's repository: cuda-drivers-580 at two releases, past the hold.
  StepHarness h(DriverVersionInventory("580.95.05"));
  Node(h, "580.159.04-1");
  // The running kernel's headers (kernel-devel-K), past the kernel
  // hold's excludes.
  h.Stub("dnf",
         "echo \"dnf $*\" >>\"$CALLS\"\n"
         "case \"$*\" in *repoquery*) printf '%s\\n' 580.159.04-1 580.95.05-1 ;; esac");
  ASSERT_EQ(h.Change("gpu.driver", "r").status, 0);
  EXPECT_TRUE(InOrder(
      Slurp(h.dir() / "calls"),
      std::string("dnf -y -q install --disableexcludes=main kernel-devel-") + kKernel + "\n",
      "dnf -y -q --disableexcludes=main --allowerasing install "
      "cuda-drivers-580-580.95.05-1\n"));

  // A branch installs the branch's metapackage, as before.
  StepHarness branch(DriverVersionInventory("580"));
  Node(branch, "");
  branch.Stub("dnf", "echo \"dnf $*\" >>\"$CALLS\"");
  ASSERT_EQ(branch.Change("gpu.driver", "r").status, 0);
  const std::string calls = Slurp(branch.dir() / "calls");
  EXPECT_NE(
      calls.find("\ndnf -y -q --disableexcludes=main --allowerasing install cuda-drivers-580\n"),
      std::string::npos)
      << calls;
  EXPECT_EQ(calls.find("cuda-drivers-580-"), std::string::npos) << calls;
}

}  // namespace
}  // namespace gpuctl
