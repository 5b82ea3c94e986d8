// gpu.mig-mode and gpu.mig-instances (playbooks/22-gpu-mig.yaml) against the
// lab's nvidia-smi stand-in run from the source tree on a throwaway node
// root: the mode probe names the GPU and what is pending, the reboot makes
// a pending mode current, the unit's ExecStart lines create exactly the
// inventory's instances at gpuctl's placements, and a reboot loses them.
#include <gtest/gtest.h>

#include "standin_node.h"
#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

constexpr const char* kMigInventory = R"(cluster: t
orchestrator: kubernetes
nodes:
  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}
  - name: u
    address: 198.18.0.2
    os: ubuntu-22.04
    roles: [worker]
    hardware:
      gpus:
        model: NVIDIA H100 80GB HBM3
        count: 2
        mig: [{gpus: 0, instances: {1g.10gb: 2, 3g.40gb: 1}}]
  - name: v
    address: 198.18.0.3
    os: rocky-9
    roles: [worker]
    hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 2, mig: []}}
)";
constexpr const char* kMigUnit = "/etc/systemd/system/gpuctl-mig.service";

class MigStepTest : public ::testing::Test {
 protected:
  MigStepTest() : h_(kMigInventory) {}
  void SetUp() override {
    if (!testing::HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
    node_.Profile("LAB_NODE=u\nGPU_MODEL=H100\nGPU_COUNT=2\n");
    node_.Driver("550.54.15");
    node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", "550.54.15\n");
    node_.Write("etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n");
    const auto standins = testing::StandinsDir();
    h_.Stub("nvidia-smi",
            "GPUCTL_LAB_ROOT=" + testing::Quote(node_.root().string()) + " GPUCTL_LAB_PROFILE=" +
                testing::Quote((node_.root() / "etc/gpuctl-lab/profile.env").string()) +
                " PYTHONPATH=" +
                testing::Quote(
                    (standins / "gpuctl-lab-common/root/usr/lib/gpuctl-lab/python").string()) +
                " exec /usr/bin/python3 " +
                testing::Quote((standins / "nvidia-utils/root/usr/bin/nvidia-smi").string()) +
                " \"$@\"");
    h_.Stub("systemctl", "exit 0");  // every unit enabled
    Reboot();
  }
  void Reboot() {
    std::filesystem::remove_all(node_.root() / "run");
    ASSERT_EQ(node_.Run("nvidia-dkms/root/usr/lib/gpuctl-lab/driver-state", "--load").status, 0);
  }
  // Runs `script` after the step's common: (the prelude comes first).
  testing::StepRun WithCommon(const std::string& step, const std::string& script) {
    return h_.Script(h_.catalog().Find(step)->common + "\n" + script, step, "u");
  }

  StepHarness h_;
  testing::StandinNode node_;
};

TEST_F(MigStepTest, APendingModeNeedsTheRebootTheStepAsksFor) {
  EXPECT_TRUE(h_.catalog().Find("gpu.mig-mode")->reboot);
  auto before = h_.Probe("gpu.mig-mode", "u");
  EXPECT_EQ(before.status, 1);
  EXPECT_EQ(before.out, "GPU 0: MIG mode Disabled (want Enabled)\n");
  ASSERT_EQ(node_.Run("nvidia-utils/root/usr/bin/nvidia-smi", "-pm 1").status, 0);
  auto change = h_.Change("gpu.mig-mode", "u");
  ASSERT_EQ(change.status, 0) << change.out;
  auto pending = h_.Probe("gpu.mig-mode", "u");
  EXPECT_EQ(pending.status, 1);
  EXPECT_EQ(pending.out, "GPU 0: MIG mode Disabled, Enabled pending (want Enabled)\n");
  Reboot();
  auto after = h_.Probe("gpu.mig-mode", "u");
  EXPECT_EQ(after.status, 0) << after.out;
}

TEST_F(MigStepTest, TheUnitMakesTheLayoutAndTheProbeSeesItGoAtReboot) {
  ASSERT_EQ(node_.Run("nvidia-utils/root/usr/bin/nvidia-smi", "-i 0 -mig 1").status, 0);
  auto unit = WithCommon("gpu.mig-instances", "mig_unit");
  ASSERT_EQ(unit.status, 0) << unit.out;
  // GPU 0 at the placements validate computed; GPU 1 runs whole: no line.
  const std::string create = "nvidia-smi mig -i 0 -cgi 3g.40gb:0,1g.10gb:4,1g.10gb:5 -C";
  EXPECT_NE(unit.out.find("\nExecStart=/usr/bin/" + create + "\n"), std::string::npos) << unit.out;
  EXPECT_EQ(unit.out.find("-i 1 "), std::string::npos) << unit.out;
  EXPECT_NE(unit.out.find("\nBefore=kubelet.service slurmd.service"), std::string::npos);

  h_.File(kMigUnit, unit.out.substr(0, unit.out.size() - 1));
  auto none = h_.Probe("gpu.mig-instances", "u");
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.out.rfind("GPU 0 has 0 ", 0), 0U) << none.out;
  ASSERT_EQ(h_.Script(create, "gpu.mig-instances", "u").status, 0);
  auto made = h_.Probe("gpu.mig-instances", "u");
  EXPECT_EQ(made.status, 0) << made.out;
  // One instance too many (made by hand): named by profile and count.
  ASSERT_EQ(node_.Run("nvidia-utils/root/usr/bin/nvidia-smi", "mig -i 0 -cgi 19 -C").status, 0);
  auto extra = h_.Probe("gpu.mig-instances", "u");
  EXPECT_EQ(extra.out, "GPU 0 has 3 1g.10gb MIG device(s) (want 2)\n");
  Reboot();
  EXPECT_EQ(h_.Probe("gpu.mig-instances", "u").status, 1);
}

TEST_F(MigStepTest, AnEditedUnitIsNamed) {
  h_.File(kMigUnit, "[Service]\nExecStart=/bin/true");
  auto r = h_.Probe("gpu.mig-instances", "u");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            std::string(kMigUnit) + " is missing or differs from the inventory's MIG layout\n");
}

TEST_F(MigStepTest, MigOffMeansNoUnitAndEveryGpuWhole) {
  EXPECT_EQ(h_.Probe("gpu.mig-instances", "v").status, 0);
  h_.File(kMigUnit, "[Service]\nExecStart=/usr/bin/nvidia-smi mig -cgi 19 -C");
  auto r = h_.Probe("gpu.mig-instances", "v");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, std::string(kMigUnit) +
                       " still makes MIG instances at boot (the inventory turns MIG off)\n");
  ASSERT_EQ(node_.Run("nvidia-utils/root/usr/bin/nvidia-smi", "-mig 1").status, 0);
  auto mode = h_.Probe("gpu.mig-mode", "v");
  EXPECT_EQ(mode.out, "GPU 0: MIG mode Enabled (want Disabled)\n");
}

}  // namespace
}  // namespace gpuctl
