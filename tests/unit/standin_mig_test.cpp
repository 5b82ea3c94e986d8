// MIG in the lab's nvidia-smi stand-in (gpuctl_mig.py): the mode kept across
// reboots and left pending while a client holds the GPU, instances lost at
// every reboot, and the listings in the real column layout (published
// captures of -lgi, -lci and -L on H100 and A100 boards).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <regex>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kMigSmi = "nvidia-utils/root/usr/bin/nvidia-smi";
constexpr const char* kMigDriverState = "nvidia-dkms/root/usr/lib/gpuctl-lab/driver-state";

class MigStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    if (geteuid() != 0) GTEST_SKIP() << "nvidia-smi -mig needs root, as the real one does";
    node_.Profile("LAB_NODE=gpu-01\nGPU_MODEL=H100\nGPU_COUNT=2\n");
    node_.Driver("550.54.15");
    node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", "550.54.15\n");
    node_.Write("etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n");
    Boot();
  }
  void Boot() const {
    // A reboot: /run is a fresh tmpfs, the module loads again.
    std::filesystem::remove_all(node_.root() / "run");
    ASSERT_EQ(node_.Run(kMigDriverState, "--load").status, 0);
  }
  RunResult Smi(const std::string& args) const { return node_.Run(kMigSmi, args, true); }
  std::string Modes() const {
    return Smi("--query-gpu=index,mig.mode.current,mig.mode.pending --format=csv,noheader").out;
  }

  StandinNode node_;
};

TEST_F(MigStandin, ModeWaitsForTheRebootWhileAClientHoldsTheGpu) {
  ASSERT_EQ(Smi("-pm 1").status, 0);  // nvidia-persistenced holds the GPUs
  RunResult r = Smi("-i 0 -mig 1");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Warning: MIG mode is in pending enable state for GPU 00000000:18:00.0:In "
                       "use by another client"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Modes(), "0, Disabled, Enabled\n1, Disabled, Disabled\n");
  EXPECT_EQ(Smi("mig -cgi 19 -C").out, "No MIG-enabled devices found.\n");
  Boot();
  EXPECT_EQ(Modes(), "0, Enabled, Enabled\n1, Disabled, Disabled\n");
}

TEST_F(MigStandin, ModeChangesAtOnceOnAnIdleGpuAndStaysAcrossReboots) {
  RunResult r = Smi("-i 1 -mig 1");
  EXPECT_EQ(r.out, "Enabled MIG Mode for GPU 00000000:2A:00.0\nAll done.\n");
  Boot();
  EXPECT_EQ(Modes(), "0, Disabled, Disabled\n1, Enabled, Enabled\n");
}

TEST_F(MigStandin, InstancesAreListedInTheRealLayoutAndLostAtReboot) {
  ASSERT_EQ(Smi("-mig 1").status, 0);
  RunResult made = Smi("mig -i 0 -cgi 3g.40gb:4,2g.20gb:0,19,1g.10gb -C");
  ASSERT_EQ(made.status, 0) << made.out;
  EXPECT_EQ(Lines(made.out).at(0),
            "Successfully created GPU instance ID  1 on GPU  0 using profile MIG 3g.40gb (ID  9)");
  EXPECT_EQ(Lines(made.out).at(1),
            "Successfully created compute instance ID  0 on GPU  0 GPU instance ID  1 using "
            "profile MIG 3g.40gb (ID  2)");
  // The real -lgi row, with the same widths (a published H100 capture:
  // "|   0  MIG 1g.10gb            0        0          0:1     |").
  auto gi = Lines(Smi("mig -lgi").out);
  ASSERT_GE(gi.size(), 7U);
  EXPECT_EQ(gi.at(2), "| GPU   Name               Profile  Instance   Placement  |");
  EXPECT_EQ(gi.at(5), "|   0  MIG 3g.40gb            9        1          4:4     |");
  EXPECT_EQ(gi.at(7), "|   0  MIG 2g.20gb           14        2          0:2     |");
  auto ci = Lines(Smi("mig -lci").out);
  EXPECT_EQ(ci.at(6), "|   0      1       MIG 3g.40gb          2         0          0:3     |");
  // -L: each compute instance is a MIG device under its GPU.
  std::regex device(
      R"(  MIG (3g\.40gb|2g\.20gb|1g\.10gb) +Device  \d: \(UUID: MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\))");
  auto listed = Lines(Smi("-L").out);
  ASSERT_EQ(listed.size(), 6U);
  EXPECT_EQ(listed[1].substr(0, 26), "  MIG 3g.40gb     Device  ");
  for (std::size_t i = 1; i <= 4; ++i)
    EXPECT_TRUE(std::regex_match(listed[i], device)) << listed[i];
  // No room for another 3g: the driver's own refusal.
  RunResult full = Smi("mig -i 0 -cgi 9 -C");
  EXPECT_EQ(full.status, 255);
  EXPECT_NE(full.out.find("Insufficient Resources"), std::string::npos);
  Boot();
  EXPECT_EQ(Lines(Smi("-L").out).size(), 2U);  // the mode stays, the instances went
  EXPECT_EQ(Modes(), "0, Enabled, Enabled\n1, Enabled, Enabled\n");
}

TEST_F(MigStandin, DestroyingFollowsTheDriversOrder) {
  ASSERT_EQ(Smi("-mig 1").status, 0);
  ASSERT_EQ(Smi("mig -cgi 7g.80gb -C").status, 0);
  // A GPU instance with a compute instance is in use.
  EXPECT_EQ(Smi("mig -dgi").status, 255);
  EXPECT_EQ(Smi("-i 0 -mig 0").status, 19);
  EXPECT_EQ(Smi("mig -dci").status, 0);
  EXPECT_EQ(Smi("mig -dgi").status, 0);
  EXPECT_EQ(Smi("mig -dgi").out, "No GPU instances found: Not Found\n");
  EXPECT_EQ(Smi("-i 0 -mig 0").out, "Disabled MIG Mode for GPU 00000000:18:00.0\nAll done.\n");
}

// Each GPU and compute instance is a capability the driver publishes under
// /proc/driver/nvidia/capabilities with the minor of its /dev/nvidia-caps
// node (gpu0/gi2/access 21 and gi2/ci0/access 22, as published captures show);
// Slurm's gres.conf names those nodes. They go with the instances.
TEST_F(MigStandin, InstancesPublishTheirCapabilitiesLikeTheDriver) {
  const std::filesystem::path caps = node_.root() / "proc/driver/nvidia/capabilities";
  EXPECT_EQ(ReadFile(caps / "mig/config"),
            "DeviceFileMinor: 1\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
  ASSERT_EQ(Smi("-mig 1").status, 0);
  ASSERT_EQ(Smi("mig -i 1 -cgi 1g.10gb,1g.10gb -C").status, 0);
  // GPU 1's GI 2: 3 + 135 (GPU 0's slots) + 2 x 9.
  EXPECT_EQ(ReadFile(caps / "gpu1/mig/gi2/access").substr(0, 21), "DeviceFileMinor: 156\n");
  EXPECT_EQ(ReadFile(caps / "gpu1/mig/gi2/ci0/access").substr(0, 21), "DeviceFileMinor: 157\n");
  EXPECT_TRUE(std::filesystem::exists(caps / "gpu1/mig/gi1/ci0/access"));
  EXPECT_FALSE(std::filesystem::exists(caps / "gpu0/mig/gi1"));
  if (geteuid() == 0) {
    struct stat st {};
    ASSERT_EQ(stat((node_.root() / "dev/nvidia-caps/nvidia-cap157").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(minor(st.st_rdev), 157U);
  }
  ASSERT_EQ(Smi("mig -dci").status, 0);
  EXPECT_FALSE(std::filesystem::exists(caps / "gpu1/mig/gi2/ci0"));
  EXPECT_TRUE(std::filesystem::exists(caps / "gpu1/mig/gi2/access"));
  ASSERT_EQ(Smi("mig -cgi 1g.10gb -C").status, 0);
  Boot();  // the driver loses every instance, and their capabilities
  EXPECT_FALSE(std::filesystem::exists(caps / "gpu1/mig"));
  EXPECT_TRUE(std::filesystem::exists(caps / "mig/monitor"));
}

TEST_F(MigStandin, AGpuWithoutMigSaysNotSupported) {
  node_.Profile("LAB_NODE=gpu-01\nGPU_MODEL=L40S\nGPU_COUNT=1\n");
  RunResult r = Smi("-mig 1");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find(": Not Supported\nTreating as warning and moving on."), std::string::npos)
      << r.out;
  EXPECT_EQ(Modes(), "0, Disabled, Disabled\n");
}

}  // namespace
}  // namespace gpuctl::testing
