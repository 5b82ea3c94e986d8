// The monitoring steps (playbooks/80-monitoring.yaml): monitor.dcgm-exporter's
// verification counts the GPUs in dcgm-exporter's /metrics
// (tests/fixtures/dcgm/), and its probe reads package and unit states.
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

std::string MonitoringInventory(int gpus) {
  return "cluster: t\nnodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: w\n    address: 198.18.0.2\n    os: ubuntu-22.04\n    roles: [worker]\n"
         "    hardware: {gpus: {model: NVIDIA A100-SXM4-80GB, count: " +
         std::to_string(gpus) + "}}\n";
}

TEST(DcgmExporter, VerifyCountsOneTemperaturePerGpu) {
  StepHarness h(MonitoringInventory(8));
  h.StubOutput("systemctl", "");
  h.StubFixture("curl", "dcgm/metrics-a100x8.txt");
  const auto run = h.Verify("monitor.dcgm-exporter", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(DcgmExporter, VerifyNamesMissingGpusWhateverTheLabels) {
  // Kubernetes labels on some samples, and the eighth GPU gone.
  StepHarness h(MonitoringInventory(8));
  h.StubOutput("systemctl", "");
  h.StubFixture("curl", "dcgm/metrics-a100x7-k8s.txt");
  auto run = h.Verify("monitor.dcgm-exporter", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "dcgm-exporter reports DCGM_FI_DEV_GPU_TEMP for 7 of 8 GPUs\n");

  StepHarness seven(MonitoringInventory(7));
  seven.StubOutput("systemctl", "");
  seven.StubFixture("curl", "dcgm/metrics-a100x7-k8s.txt");
  run = seven.Verify("monitor.dcgm-exporter", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(DcgmExporter, ProbeCountsHeldPackagesAsInstalledAndWantsTheUnitRunning) {
  StepHarness h(MonitoringInventory(8));
  h.StubOutput("dpkg-query", "hold ok installed");
  h.Stub("systemctl", "case \"$1\" in is-enabled) exit 0 ;; is-active) exit 3 ;; esac");
  auto run = h.Probe("monitor.dcgm-exporter", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "dcgm-exporter is not running\n");

  h.StubOutput("dpkg-query", "deinstall ok config-files");
  run = h.Probe("monitor.dcgm-exporter", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "datacenter-gpu-manager is not installed (only its configuration files remain)\n");
}

TEST(Prometheus, ProbeOnTheMasterWantsThePackageFirst) {
  StepHarness h(MonitoringInventory(8));
  h.StubOutput("dpkg-query", "", 1);
  const auto run = h.Probe("monitor.prometheus", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "prometheus is not installed\n");
}

}  // namespace
}  // namespace gpuctl
