// The GPU steps' probes and verifications (playbooks/20-gpu.yaml) read
// nvidia-smi as the real tool answers: a real H100 capture
// (tests/fixtures/nvidia-smi/h100-80gb-hbm3/) through the stub in
// tests/support/stubs/nvidia-smi.
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

std::string GpuInventory(const std::string& branch, int gpus, const std::string& model) {
  return "cluster: t\nversions: {driver_branch: \"" + branch +
         "\", cuda: \"12.4\"}\nnodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: w\n    address: 198.18.0.2\n    os: rocky-9\n    roles: [worker]\n"
         "    hardware: {gpus: {model: \"" +
         model + "\", count: " + std::to_string(gpus) + "}}\n";
}

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";

class GpuStepsTest : public ::testing::Test {
 protected:
  void Use(StepHarness& h, int gpus_present) {
    h.UseStub("nvidia-smi");
    h.SetEnv("STUB_CSV", StepHarness::Fixture("nvidia-smi/h100-80gb-hbm3/query_csv.txt"));
    h.SetEnv("STUB_GPUS", std::to_string(gpus_present));
  }
};

TEST_F(GpuStepsTest, DriverVerifyPassesWhenCountModelAndBranchMatch) {
  // Real CUDA 13.0 driver 580.159.04; branch 580 wants at least CUDA 12.x.
  StepHarness h(GpuInventory("580", 8, kH100));
  Use(h, 8);
  const auto run = h.Verify("gpu.driver", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(GpuStepsTest, DriverVerifyNamesMissingGpus) {
  StepHarness h(GpuInventory("580", 8, kH100));
  Use(h, 7);
  const auto run = h.Verify("gpu.driver", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("7 of 8 GPUs visible"), std::string::npos) << run.out;
}

TEST_F(GpuStepsTest, DriverVerifyNamesWrongModel) {
  StepHarness h(GpuInventory("580", 2, "NVIDIA A100-SXM4-80GB"));
  Use(h, 2);
  const auto run = h.Verify("gpu.driver", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("2 GPU(s) differ from 'NVIDIA A100-SXM4-80GB'"), std::string::npos)
      << run.out;
}

TEST_F(GpuStepsTest, DriverVerifyNamesWrongBranch) {
  StepHarness h(GpuInventory("550", 1, kH100));
  Use(h, 1);
  const auto run = h.Verify("gpu.driver", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("on branch 550"), std::string::npos) << run.out;
}

TEST_F(GpuStepsTest, DriverVerifyReportsAnUnloadedDriver) {
  StepHarness h(GpuInventory("580", 1, kH100));
  h.Stub("nvidia-smi",
         "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
         "driver.\"\nexit 9");
  const auto run = h.Verify("gpu.driver", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("nvidia-smi fails: NVIDIA-SMI has failed"), std::string::npos) << run.out;
}

TEST_F(GpuStepsTest, PersistenceProbeReadsTheRealModeColumn) {
  StepHarness h(GpuInventory("580", 1, kH100));
  Use(h, 1);  // the capture says Enabled
  h.StubOutput("systemctl", "", 0);
  EXPECT_EQ(h.Probe("gpu.persistence", "w").status, 0);

  h.StubOutput("systemctl", "", 1);  // nvidia-persistenced not enabled
  const auto run = h.Probe("gpu.persistence", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("not enabled at boot"), std::string::npos) << run.out;
}

TEST_F(GpuStepsTest, PersistenceProbeIsUnknownWithoutADriver) {
  StepHarness h(GpuInventory("580", 1, kH100));
  h.Stub("nvidia-smi", "exit 9");
  EXPECT_EQ(h.Probe("gpu.persistence", "w").status, 3);
}

}  // namespace
}  // namespace gpuctl
