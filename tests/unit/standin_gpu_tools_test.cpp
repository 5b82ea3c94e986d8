// nccl-tests' all_reduce_perf and DCGM's tools, as stand-ins: the real report
// formats, with figures that follow the node's profile (IB ports, GPUs).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kAllReduce = "nccl-tests/root/usr/bin/all_reduce_perf";

class GpuToolsStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    node_.Driver("550.127.05");
    node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", "550.127.05\n");
    node_.Write("etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n");
    Profile("");
    ASSERT_EQ(node_.Run("nvidia-dkms/root/usr/lib/gpuctl-lab/driver-state", "--load").status, 0);
  }
  void TearDown() override { unsetenv("OMPI_COMM_WORLD_SIZE"); }
  void Profile(const std::string& faults) const {
    node_.Profile(
        "LAB_NODE=gpu-01\nGPU_MODEL=H100\nGPU_COUNT=8\n"
        "IB_PORTS=\"mlx5_0:1:400:Active mlx5_1:1:400:Active\"\nFAULTS=\"" +
        faults + "\"\n");
  }
  // The "# Avg bus bandwidth" figure of a two-node run.
  double AvgBusBw() const {
    RunResult r = node_.Run(kAllReduce, "-b 1G -e 4G -f 2 -g 8");
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.out, m, std::regex("# Avg bus bandwidth    : ([0-9.]+) \n")))
        << r.out;
    return m.empty() ? 0 : std::stod(m[1].str());
  }
  StandinNode node_;
};

TEST_F(GpuToolsStandin, AllReducePerfPrintsTheRealFormat) {
  RunResult r = node_.Run(kAllReduce, "-b 8 -e 128M -f 2 -g 8");
  ASSERT_EQ(r.status, 0);
  auto lines = Lines(r.out);
  EXPECT_EQ(lines.at(0),
            "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0");
  EXPECT_TRUE(std::regex_match(
      lines.at(3), std::regex(R"(#  Rank  0 Group  0 Pid +\d+ on +\S+ device  0 \[0x18\] )"
                              R"(NVIDIA H100 80GB HBM3)")));
  std::regex row(R"( +\d+ +\d+ +float +sum +-1( +[0-9.]+ +[0-9.]+ +[0-9.]+ +0){2})");
  int rows = 0;
  for (const auto& line : lines) rows += std::regex_match(line, row) ? 1 : 0;
  EXPECT_EQ(rows, 25);  // 8 B .. 128 MiB, doubling
  EXPECT_EQ(lines.at(lines.size() - 3), "# Out of bounds values : 0 OK");
}

TEST_F(GpuToolsStandin, AllReduceBandwidthFollowsTheIbPorts) {
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);  // as under mpirun across two nodes
  double both_up = AvgBusBw();
  Profile("ib-down=mlx5_1");
  double one_down = AvgBusBw();
  EXPECT_GT(both_up, 80.0);  // 2 x 400 Gb/s = 100 GB/s on the wire
  EXPECT_LT(both_up, 100.0);
  EXPECT_NEAR(one_down, both_up / 2, both_up * 0.05);
}

TEST_F(GpuToolsStandin, DcgmiAndExporterListTheGpus) {
  RunResult discovery = node_.Run("dcgm/root/usr/bin/dcgmi", "discovery -l");
  ASSERT_EQ(discovery.status, 0);
  EXPECT_EQ(Lines(discovery.out).at(0), "8 GPUs found.");
  RunResult metrics = node_.Run("dcgm-exporter/root/usr/bin/dcgm-exporter", "--once");
  ASSERT_EQ(metrics.status, 0);
  std::regex util(
      R"(DCGM_FI_DEV_GPU_UTIL\{gpu="\d",UUID="GPU-[0-9a-f-]{36}",pci_bus_id="00000000:[0-9A-F]{2}:00.0",)"
      R"(device="nvidia\d",modelName="NVIDIA H100 80GB HBM3",Hostname="[^"]+",)"
      R"(DCGM_FI_DRIVER_VERSION="550.127.05"\} 0)");
  int samples = 0;
  for (const auto& line : Lines(metrics.out)) samples += std::regex_match(line, util) ? 1 : 0;
  EXPECT_EQ(samples, 8);
  EXPECT_NE(metrics.out.find("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"), std::string::npos);
}

}  // namespace
}  // namespace gpuctl::testing
