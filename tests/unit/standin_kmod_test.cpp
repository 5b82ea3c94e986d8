// The lab's modprobe and lsmod (lab/lib/kmod.py): nvidia-peermem loads only
// where the real kernel would let it (installed by DKMS, the nvidia module
// and OFED's ib_core loaded, built against OFED's peer-memory symbols), with
// kmod's own messages; lsmod prints what is loaded in its format; the boot
// unit loads what modules-load.d lists; other modules count as built in.
#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <filesystem>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

std::string Release() {
  struct utsname u {};
  uname(&u);
  return u.release;
}

class KmodStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    // Called by the names it answers to, as the base layer links it.
    const auto tool = std::filesystem::path(GPUCTL_SOURCE_DIR) / "lab/lib/kmod.py";
    for (const char* name : {"modprobe", "lsmod", "kmod"}) {
      std::filesystem::create_directories(node_.root() / "bin");
      std::filesystem::create_symlink(tool, node_.root() / "bin" / name);
    }
    node_.Write("run/gpuctl-lab/nvidia/module", "loaded 550.54.14\n");
    node_.Write("run/gpuctl-lab/openibd", "started\n");
  }
  RunResult Tool(const std::string& name, const std::string& args) const {
    return node_.Run((node_.root() / "bin" / name).string(), args + " 2>&1");
  }
  // nvidia-peermem as DKMS 2.8 installs it, with the placeholder's record of
  // whether OFED's symbols were there at build time.
  void Peermem(const std::string& peer_memory) const {
    node_.Write("lib/modules/" + Release() + "/updates/dkms/nvidia-peermem.ko",
                "gpuctl lab placeholder for nvidia-peermem.ko 550.54.14\npeer memory: " +
                    peer_memory + "\n");
  }
  StandinNode node_;
};

TEST_F(KmodStandin, PeermemBuiltAgainstOfedLoadsOnce) {
  Peermem("MLNX_OFED 24.01-0.3.3.1");
  EXPECT_EQ(Tool("lsmod", "").out, "Module                  Size  Used by\n");
  RunResult r = Tool("modprobe", "nvidia-peermem");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Tool("modprobe", "nvidia_peermem").status, 0);
  EXPECT_EQ(Tool("lsmod", "").out,
            "Module                  Size  Used by\nnvidia_peermem         16384  0\n");
  EXPECT_EQ(Tool("modprobe", "-r nvidia-peermem").status, 0);
  EXPECT_EQ(Tool("lsmod", "").out, "Module                  Size  Used by\n");
}

TEST_F(KmodStandin, BuiltBeforeOfedItsInitFails) {
  Peermem("none (built without MLNX_OFED's ib_core symbols)");
  const RunResult r = Tool("modprobe", "nvidia-peermem");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n");
  EXPECT_EQ(Tool("lsmod", "").out, "Module                  Size  Used by\n");
}

TEST_F(KmodStandin, MissingModuleOrDependenciesGiveKmodsErrors) {
  RunResult r = Tool("modprobe", "nvidia-peermem");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "modprobe: FATAL: Module nvidia-peermem not found in directory /lib/modules/" +
                       Release() + "\n");
  Peermem("MLNX_OFED 24.01-0.3.3.1");
  std::filesystem::remove(node_.root() / "run/gpuctl-lab/openibd");
  r = Tool("modprobe", "nvidia-peermem");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            "modprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or "
            "unknown parameter (see dmesg)\n");
}

TEST_F(KmodStandin, OtherModulesCountAsBuiltIn) {
  EXPECT_EQ(Tool("modprobe", "overlay").status, 0);
  EXPECT_EQ(Tool("modprobe", "br_netfilter").status, 0);
  EXPECT_EQ(Tool("lsmod", "").out, "Module                  Size  Used by\n");
}

TEST_F(KmodStandin, BootLoadsWhatModulesLoadDLists) {
  Peermem("MLNX_OFED 24.01-0.3.3.1");
  node_.Write("etc/modules-load.d/gpuctl-peermem.conf", "# GPUDirect RDMA\nnvidia-peermem\n");
  node_.Write("etc/modules-load.d/gpuctl-k8s.conf", "overlay\nbr_netfilter\n");
  EXPECT_EQ(Tool("kmod", "--load-boot").status, 0);
  EXPECT_EQ(Tool("lsmod", "").out,
            "Module                  Size  Used by\nnvidia_peermem         16384  0\n");
}

}  // namespace
}  // namespace gpuctl::testing
