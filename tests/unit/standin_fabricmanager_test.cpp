// The NVSwitch board as the lab simulates it: CUDA (the stand-in libcuda's
// cuInit, nccl-tests) fails with 802 "system not yet initialized" until a
// Fabric Manager of the loaded driver's version runs; nvidia-smi -q shows the
// fabric state on Hopper; the daemon refuses another driver version with the
// real message.
#include <gtest/gtest.h>

#include <csignal>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kDaemon = "nvidia-fabricmanager/root/usr/bin/nv-fabricmanager";
constexpr const char* kCudaState = "libnvidia-compute/root/usr/lib/gpuctl-lab/cuda-state";
constexpr const char* kSmi = "nvidia-utils/root/usr/bin/nvidia-smi";
constexpr const char* kDriver = "550.127.05";

class FabricManagerStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    node_.Driver(std::string(kDriver));
    node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", std::string(kDriver) + "\n");
    node_.Write("etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n");
    Board("H100", true);
    ASSERT_EQ(node_.Run("nvidia-dkms/root/usr/lib/gpuctl-lab/driver-state", "--load").status, 0);
  }
  void TearDown() override {
    // A daemon a test started runs on in the background: stop it.
    const std::string pid =
        ReadFile(node_.root() / "run/nvidia-fabricmanager/nv-fabricmanager.pid");
    if (!pid.empty() &&
        ReadFile("/proc/" + std::to_string(std::stoi(pid)) + "/cmdline").find("nv-fabricmanager") !=
            std::string::npos) {
      kill(std::stoi(pid), SIGTERM);
    }
  }
  void Board(const std::string& model, bool nvswitch) const {
    node_.Profile("LAB_NODE=gpu-01\nGPU_MODEL=" + model +
                  "\nGPU_COUNT=8\nGPU_NVSWITCH=" + (nvswitch ? "1" : "0") + "\n");
  }
  void InstallFabricManager(const std::string& version) const {
    node_.Write("usr/lib/gpuctl-lab/nvidia/fabricmanager-version", version + "\n");
  }
  std::string CuInit() const { return node_.Run(kCudaState, "--cuinit").out; }
  // The first GPU's Fabric State and Status in nvidia-smi -q.
  std::string FabricOfGpu0() const {
    const std::string q = node_.Run(kSmi, "-q").out;
    const auto at = q.find("\n    Fabric\n");
    return at == std::string::npos ? "no Fabric section" : q.substr(at + 12, 200);
  }
  StandinNode node_;
};

TEST_F(FabricManagerStandin, CudaFailsWith802UntilFabricManagerRuns) {
  EXPECT_EQ(CuInit(), "802 0\n");
  EXPECT_NE(FabricOfGpu0().find("State                                          : Not Started"),
            std::string::npos)
      << FabricOfGpu0();
  const RunResult nccl = node_.Run("nccl-tests/root/usr/bin/all_reduce_perf", "-g 8", true);
  EXPECT_NE(nccl.status, 0);
  EXPECT_NE(nccl.out.find("Test CUDA failure common.cu:892 'system not yet initialized'"),
            std::string::npos)
      << nccl.out;
  // nvidia-smi itself is content: the GPUs are all there.
  EXPECT_EQ(node_.Run(kSmi, "-L").status, 0);

  InstallFabricManager(kDriver);
  const RunResult start = node_.Run(kDaemon, "", true);
  ASSERT_EQ(start.status, 0) << start.out;
  EXPECT_EQ(CuInit(), "0 8\n");
  EXPECT_NE(FabricOfGpu0().find("State                                          : Completed\n"
                                "        Status                                         : Success"),
            std::string::npos)
      << FabricOfGpu0();
  EXPECT_EQ(node_.Run("nccl-tests/root/usr/bin/all_reduce_perf", "-b 8 -e 8 -g 8").status, 0);

  // Stopped (or killed), it no longer keeps the fabric up.
  const std::string pid = std::to_string(
      std::stoi("0" + ReadFile(node_.root() / "run/nvidia-fabricmanager/nv-fabricmanager.pid")));
  ASSERT_NE(pid, "0");
  ASSERT_EQ(kill(std::stoi(pid), SIGKILL), 0);
  // Gone once init has reaped it (it runs detached, as a daemon does).
  RunShell("i=0; while kill -0 " + pid +
           " 2>/dev/null && [ $i -lt 200 ]; do i=$((i+1)); sleep 0.05; done");
  EXPECT_EQ(CuInit(), "802 0\n");
}

TEST_F(FabricManagerStandin, RefusesADriverOfAnotherVersionWithTheRealMessage) {
  InstallFabricManager("550.90.07");
  const RunResult start =
      node_.Run(kDaemon, "-c /usr/share/nvidia/nvswitch/fabricmanager.cfg", true);
  EXPECT_EQ(start.status, 1);
  const std::string message =
      "fabric manager NVIDIA GPU driver interface version 550.90.07 don't match with driver "
      "version 550.127.05. Please update with matching NVIDIA driver package.";
  EXPECT_NE(start.out.find(message), std::string::npos) << start.out;
  EXPECT_NE(ReadFile(node_.root() / "var/log/fabricmanager.log").find(message), std::string::npos);
  EXPECT_EQ(CuInit(), "802 0\n");
  EXPECT_EQ(node_.Run(kDaemon, "--version").out, "Fabric Manager version is : 550.90.07\n");
}

TEST_F(FabricManagerStandin, OtherBoardsNeedNoFabricManager) {
  // No NVSwitch: CUDA works, the fabric is N/A, and Fabric Manager has nothing to do.
  Board("H100", false);
  EXPECT_EQ(CuInit(), "0 8\n");
  EXPECT_NE(FabricOfGpu0().find("State                                          : N/A"),
            std::string::npos);
  InstallFabricManager(kDriver);
  const RunResult start = node_.Run(kDaemon, "", true);
  EXPECT_EQ(start.status, 1);
  EXPECT_NE(start.out.find("no NVIDIA NVSwitch found"), std::string::npos) << start.out;
  // An A100 board on NVSwitch needs it, but reports no fabric state (pre-Hopper).
  Board("A100", true);
  EXPECT_EQ(CuInit(), "802 0\n");
  EXPECT_NE(FabricOfGpu0().find("State                                          : N/A"),
            std::string::npos);
}

TEST_F(FabricManagerStandin, LibcudaAnswersThroughCtypes) {
  // The stub libcuda.so.1 the package builds, asked as gpuctl's step asks it.
  const auto lib = node_.root() / "lib";
  std::filesystem::create_directories(lib);
  const std::string source = (StandinsDir() / "libnvidia-compute/libcuda.c").string();
  if (RunShell("command -v cc >/dev/null").status != 0) GTEST_SKIP() << "no C compiler";
  ASSERT_EQ(RunShell("sed s/@CUDA_VERSION@/12040/ " + Quote(source) +
                     " | cc -shared -fPIC -x c -o " + Quote((lib / "libcuda.so.1").string()) + " -")
                .status,
            0);
  const std::string python_path =
      (StandinsDir() / "gpuctl-lab-common/root/usr/lib/gpuctl-lab/python").string();
  const std::string env =
      "LD_LIBRARY_PATH=" + Quote(lib.string()) + " GPUCTL_LAB_ROOT=" + Quote(node_.root()) +
      " GPUCTL_LAB_PROFILE=" + Quote((node_.root() / "etc/gpuctl-lab/profile.env").string()) +
      " PYTHONPATH=" + Quote(python_path) + " GPUCTL_LAB_CUDA_STATE=" +
      Quote("/usr/bin/python3 " + (StandinsDir() / kCudaState).string());
  const std::string probe =
      "import ctypes\n"
      "c = ctypes.CDLL('libcuda.so.1')\n"
      "rc = c.cuInit(0)\n"
      "s = ctypes.c_char_p()\n"
      "c.cuGetErrorString(rc, ctypes.byref(s))\n"
      "n = ctypes.c_int(-1)\n"
      "print(rc, s.value.decode(), c.cuDeviceGetCount(ctypes.byref(n)), n.value)\n";
  EXPECT_EQ(RunShell(env + " /usr/bin/python3 -c " + Quote(probe)).out,
            "802 system not yet initialized 802 -1\n");
  Board("H100", false);
  EXPECT_EQ(RunShell(env + " /usr/bin/python3 -c " + Quote(probe)).out, "0 no error 0 8\n");
}

}  // namespace
}  // namespace gpuctl::testing
