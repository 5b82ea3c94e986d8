// The lab's nvidia-smi stand-in against the real output captured on an H100
// (tests/fixtures/nvidia-smi/h100-80gb-hbm3/): what gpuctl parses must have the
// real shape, byte for byte where the values can be the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kSmiStub = "nvidia-utils/root/usr/bin/nvidia-smi";
constexpr const char* kDriverState = "nvidia-dkms/root/usr/lib/gpuctl-lab/driver-state";
// The fields of the real capture's query_csv.txt, in its order.
constexpr const char* kCsvFields =
    "index,name,uuid,driver_version,memory.total,pci.bus_id,persistence_mode,temperature.gpu,"
    "utilization.gpu,memory.used,power.draw,serial,vbios_version,compute_cap";

std::string Fixture(const std::string& name) { return ReadFile(NvidiaFixtures() / name); }

class NvidiaSmiStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
  }

  // A node as after "install driver 580.159.04 (the captured one), blacklist
  // nouveau, reboot": the boot step loads the module.
  void InstallAndBoot(const std::string& profile, const std::string& version = "580.159.04") {
    node_.Profile(profile);
    node_.Driver(version);
    node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", version + "\n");
    node_.Write("etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n");
    Boot();
  }
  void Boot() const { ASSERT_EQ(node_.Run(kDriverState, "--load").status, 0); }

  RunResult Smi(const std::string& args, bool with_stderr = false) const {
    return node_.Run(kSmiStub, args, with_stderr);
  }

  StandinNode node_;
};

const char* kOneH100 = "LAB_NODE=gpu-01\nGPU_MODEL=\"NVIDIA H100 80GB HBM3\"\nGPU_COUNT=1\n";
const char* kEightH100 = "LAB_NODE=gpu-01\nGPU_MODEL=H100\nGPU_COUNT=8\n";

TEST_F(NvidiaSmiStandin, CsvHeaderEqualsRealByteForByte) {
  InstallAndBoot(kOneH100);
  RunResult r = Smi(std::string("--query-gpu=") + kCsvFields + " --format=csv");
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(Lines(r.out).at(0), Lines(Fixture("query_csv.txt")).at(0));
}

TEST_F(NvidiaSmiStandin, CsvRowsHaveTheRealShape) {
  InstallAndBoot(kEightH100);
  RunResult r = Smi(std::string("--query-gpu=") + kCsvFields + " --format=csv,noheader,nounits");
  ASSERT_EQ(r.status, 0);
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 8U);
  // Same field count and the same kind of value in each field as the capture.
  std::regex row(
      R"(\d, NVIDIA H100 80GB HBM3, GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-)"
      R"([0-9a-f]{12}, 580\.159\.04, 81559, 00000000:[0-9A-F]{2}:00\.0, Disabled, \d+, 0, 0, )"
      R"(\d+\.\d\d, \d{13}, 96\.00\.DA\.00\.0C, 9\.0)");
  for (const auto& line : lines) EXPECT_TRUE(std::regex_match(line, row)) << line;
  EXPECT_TRUE(std::regex_match(Lines(Fixture("query_noheader_nounits.txt")).at(0),
                               std::regex(R"(.*, \d+\.\d\d, \d{13}, .*)")));
}

TEST_F(NvidiaSmiStandin, NoHeaderAndCountQueriesEqualReal) {
  InstallAndBoot(kOneH100);
  ASSERT_EQ(Smi("-pm 1").status, 0);  // the capture's GPU had persistence on
  EXPECT_EQ(Smi("--query-gpu=index,name,driver_version,memory.total,persistence_mode "
                "--format=csv,noheader")
                .out,
            Fixture("query_noheader.txt"));
  EXPECT_EQ(Smi("--query-gpu=count,name,driver_version --format=csv,noheader").out,
            Fixture("query_count.txt"));
}

TEST_F(NvidiaSmiStandin, UnknownFieldExitsTwoWithRealMessage) {
  InstallAndBoot(kOneH100);
  RunResult r = Smi("--query-gpu=bogus --format=csv", true);
  EXPECT_EQ(r.status, 2);
  // The capture holds the output, then "rc=2".
  std::string real = Fixture("query_bad_field.txt");
  EXPECT_EQ(r.out + "rc=2\n", real);
}

TEST_F(NvidiaSmiStandin, ListLinesHaveRealFormatAndStableUuids) {
  InstallAndBoot(kEightH100);
  RunResult r = Smi("-L");
  ASSERT_EQ(r.status, 0);
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 8U);
  std::regex line_re(
      R"(GPU (\d): NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\))");
  EXPECT_TRUE(std::regex_match(Lines(Fixture("L.txt")).at(0), line_re));
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, line_re)) << lines[i];
    EXPECT_EQ(m[1].str(), std::to_string(i));
  }
  EXPECT_EQ(Smi("-L").out, r.out) << "UUIDs must not change between calls";
  node_.Profile("LAB_NODE=gpu-02\nGPU_MODEL=H100\nGPU_COUNT=8\n");
  EXPECT_NE(Smi("-L").out, r.out) << "another node has other UUIDs";
}

// Keys of `nvidia-smi -q` with their indentation: the sections and names a
// parser relies on.
std::vector<std::string> QKeys(const std::string& text) {
  std::vector<std::string> keys;
  for (const auto& line : Lines(text)) {
    if (line.rfind("Timestamp", 0) == 0) continue;
    std::string key = line.substr(0, line.find(" : "));
    while (!key.empty() && key.back() == ' ') key.pop_back();
    keys.push_back(key.rfind("GPU 0000", 0) == 0 ? "GPU <bus id>" : key);
  }
  return keys;
}

TEST_F(NvidiaSmiStandin, DetailsHaveRealSectionsAndKeys) {
  InstallAndBoot(kOneH100);
  RunResult r = Smi("-q");
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(QKeys(r.out), QKeys(Fixture("q.txt")));
  // Same column for every value.
  for (const auto& line : Lines(r.out)) {
    if (line.find(" : ") != std::string::npos) {
      EXPECT_EQ(line.find(" : "), 54U) << line;
    }
  }
}

TEST_F(NvidiaSmiStandin, TableHasRealLayout) {
  InstallAndBoot(kOneH100);
  ASSERT_EQ(Smi("-pm 1").status, 0);
  auto ours = Lines(Smi("").out);
  auto real = Lines(Fixture("smi.txt"));
  ASSERT_EQ(ours.size(), real.size());
  for (size_t i = 0; i < real.size(); ++i) {
    EXPECT_EQ(ours[i].size(), real[i].size()) << "line " << i << ": " << ours[i];
    // Lines without per-board readings (bus id, temperature, power) are equal.
    bool board_line =
        real[i].find("00000000:") != std::string::npos || real[i].find("W /") != std::string::npos;
    if (i > 0 && !board_line) {
      EXPECT_EQ(ours[i], real[i]) << "line " << i;
    }
  }
}

TEST_F(NvidiaSmiStandin, VersionAndTopologyEqualReal) {
  InstallAndBoot(kOneH100);
  EXPECT_EQ(Smi("--version").out, Fixture("version.txt"));
  // The capture's machine had 16 CPUs; the topology lists the CPUs here.
  std::string topo = Smi("topo -m").out;
  std::string cpus = "0-" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN) - 1);
  EXPECT_EQ(topo,
            std::regex_replace(Fixture("topo.txt"), std::regex("\t0-15\t"), "\t" + cpus + "\t"));
}

TEST_F(NvidiaSmiStandin, GpuMissingHidesGpus) {
  InstallAndBoot("LAB_NODE=gpu-01\nGPU_MODEL=H100\nGPU_COUNT=8\nFAULTS=\"gpu-missing=1\"\n");
  EXPECT_EQ(Lines(Smi("-L").out).size(), 7U);
  std::string seven_times;
  for (int i = 0; i < 7; ++i) seven_times += "7\n";  // count, on each GPU's row
  EXPECT_EQ(Smi("--query-gpu=count --format=csv,noheader").out, seven_times);
}

TEST_F(NvidiaSmiStandin, DriverWorksOnlyAfterBootWithNouveauBlacklisted) {
  const std::string failed =
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
      "that the latest NVIDIA driver is installed and running.\n\n";
  node_.Profile(kOneH100);
  node_.Driver("550.127.05");
  node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", "550.127.05\n");
  RunResult before = Smi("-L");
  EXPECT_EQ(before.status, 9) << "installed but not rebooted";
  EXPECT_EQ(before.out, failed);
  Boot();
  EXPECT_EQ(Smi("-L").status, 9) << "nouveau not blacklisted: the module cannot load";
  EXPECT_NE(node_.Run(kDriverState, "").out.find("reason=nouveau"), std::string::npos);
  node_.Write("etc/modprobe.d/nouveau.conf", "# gpuctl\nblacklist nouveau\n");
  EXPECT_EQ(Smi("-L").status, 9) << "the blacklist only counts from the next boot";
  Boot();
  EXPECT_EQ(Smi("-L").status, 0);
  EXPECT_EQ(node_.Run(kDriverState, "").status, 0);
  node_.Profile(std::string(kOneH100) + "FAULTS=driver-load-fail\n");
  EXPECT_EQ(Smi("-L").status, 9);
}

TEST_F(NvidiaSmiStandin, ADriverDkmsBuiltForNoRunningKernelDoesNotLoad) {
  // The package installed while the running kernel had no headers: its
  // version file is there, no module under /lib/modules/$(uname -r).
  node_.Profile(kOneH100);
  node_.Driver("550.127.05");
  node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", "550.127.05\n");
  node_.Write("etc/modprobe.d/nouveau.conf", "blacklist nouveau\n");
  std::filesystem::remove_all(node_.root() / "lib/modules");
  Boot();
  EXPECT_EQ(Smi("-L").status, 9);
  const std::string state = node_.Run(kDriverState, "").out;
  EXPECT_NE(
      state.find("reason=modprobe: FATAL: Module nvidia not found in directory /lib/modules/"),
      std::string::npos)
      << state;
}

TEST_F(NvidiaSmiStandin, NewLibraryOverOldModuleIsAVersionMismatch) {
  InstallAndBoot(kOneH100, "550.127.05");
  node_.Driver("570.86.15");
  node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", "570.86.15\n");
  RunResult r = Smi("-L");
  EXPECT_EQ(r.status, 18);
  EXPECT_EQ(r.out,
            "Failed to initialize NVML: Driver/library version mismatch\n"
            "NVML library version: 570.86\n");
  Boot();
  EXPECT_EQ(Smi("--query-gpu=driver_version --format=csv,noheader").out, "570.86.15\n");
}

TEST_F(NvidiaSmiStandin, PersistenceModeStaysOnUntilReboot) {
  if (geteuid() != 0) GTEST_SKIP() << "nvidia-smi -pm needs root, as the real one does";
  InstallAndBoot(kEightH100);
  EXPECT_EQ(Smi("--query-gpu=persistence_mode --format=csv,noheader -i 0").out, "Disabled\n");
  RunResult r = Smi("-pm 1");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Enabled persistence mode for GPU 00000000:18:00.0.\n"), std::string::npos);
  EXPECT_EQ(Lines(r.out).back(), "All done.");
  EXPECT_EQ(Smi("--query-gpu=persistence_mode --format=csv,noheader -i 0").out, "Enabled\n");
}

TEST_F(NvidiaSmiStandin, ModelAndMemoryComeFromTheProfile) {
  InstallAndBoot("LAB_NODE=a\nGPU_MODEL=A100-SXM4-80GB\nGPU_COUNT=2\nGPU_MEMORY_MIB=81920\n");
  EXPECT_EQ(Smi("--query-gpu=name,memory.total,compute_cap --format=csv,noheader -i 1").out,
            "NVIDIA A100-SXM4-80GB, 81920 MiB, 8.0\n");
}

}  // namespace
}  // namespace gpuctl::testing
