// The dkms stand-in, as Ubuntu 22.04's DKMS 2.8.7 and EPEL 9's 3.1.4: the
// real status lines, modules installed where each distribution's DKMS puts
// them, the real headers-missing error and exit codes, for the running kernel
// as for any other.
#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <filesystem>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kDkms = "dkms/root/usr/sbin/dkms";
constexpr const char* kNext = "5.15.0-131-generic";  // a kernel installed, not running
constexpr const char* kModules[] = {"nvidia", "nvidia-modeset", "nvidia-drm", "nvidia-uvm",
                                    "nvidia-peermem"};

std::string Uname(bool machine) {
  struct utsname u {};
  uname(&u);
  return machine ? u.machine : u.release;
}

class DkmsStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    std::string conf =
        "PACKAGE_NAME=\"nvidia\"\nPACKAGE_VERSION=\"550.54.14\"\nAUTOINSTALL=\"yes\"\n";
    for (int i = 0; i < 5; ++i) {
      conf += "BUILT_MODULE_NAME[" + std::to_string(i) + "]=\"" + kModules[i] + "\"\n";
      conf += "DEST_MODULE_LOCATION[" + std::to_string(i) + "]=\"/kernel/drivers/video\"\n";
    }
    node_.Write("usr/src/nvidia-550.54.14/dkms.conf", conf);
    node_.Profile("LAB_NODE=gpu-01\n");
    RunningHeaders();
  }
  // What linux-headers-$(uname -r) / kernel-devel of the running kernel add.
  void RunningHeaders() const {
    std::filesystem::create_directories(node_.root() /
                                        ("lib/modules/" + running_ + "/build/include"));
  }
  // Which real DKMS the tool is: the version file its package ships.
  void Release(const std::string& version) const {
    node_.Write("usr/lib/gpuctl-lab/dkms/version", version + "\n");
  }
  RunResult Dkms(const std::string& args, bool with_stderr = false) const {
    return node_.Run(kDkms, args, with_stderr);
  }
  bool Exists(const std::string& relative) const {
    return std::filesystem::exists(node_.root() / relative);
  }
  // The module directory and file suffix of the release's distribution.
  static std::string Installed(bool v3, const std::string& kernel, const std::string& module) {
    return "lib/modules/" + kernel +
           (v3 ? "/extra/" + module + ".ko.xz" : "/updates/dkms/" + module + ".ko");
  }
  StandinNode node_;
  const std::string running_ = Uname(false);
  const std::string arch_ = Uname(true);
};

TEST_F(DkmsStandin, StatusLinesAreTheRealOnesOfBothReleases) {
  for (const char* release : {"2.8.7", "3.1.4"}) {
    SCOPED_TRACE(release);
    Release(release);
    EXPECT_EQ(Dkms("status").out, "");
    ASSERT_EQ(Dkms("add -m nvidia -v 550.54.14").status, 0);
    // Added, built for no kernel: "module/version: added" (2.8.6 on and 3.x).
    EXPECT_EQ(Dkms("status").out, "nvidia/550.54.14: added\n");
    ASSERT_EQ(Dkms("install -m nvidia -v 550.54.14").status, 0);
    EXPECT_EQ(Dkms("status").out, "nvidia/550.54.14, " + running_ + ", " + arch_ + ": installed\n");
    // A kernel it is not built for: the module shows as only added there.
    EXPECT_EQ(Dkms(std::string("status -k ") + kNext).out, "nvidia/550.54.14: added\n");
    EXPECT_EQ(Dkms("status -m other").out, "");
    ASSERT_EQ(Dkms("remove -m nvidia -v 550.54.14 --all").status, 0);
  }
}

TEST_F(DkmsStandin, InstallForTheRunningKernelPutsPlaceholdersWhereTheDistributionDoes) {
  for (bool v3 : {false, true}) {
    SCOPED_TRACE(v3 ? "3.1.4" : "2.8.7");
    Release(v3 ? "3.1.4" : "2.8.7");
    ASSERT_EQ(Dkms("add nvidia/550.54.14").status, 0);
    ASSERT_EQ(Dkms("install nvidia/550.54.14 -k " + running_).status, 0);
    for (const char* module : kModules)
      EXPECT_TRUE(Exists(Installed(v3, running_, module))) << module;
    EXPECT_FALSE(Exists(Installed(!v3, running_, "nvidia")));
    EXPECT_NE(ReadFile(node_.root() / Installed(v3, running_, "nvidia")).find("placeholder"),
              std::string::npos);
    // DKMS's own record: the kernel-K-ARCH link to the installed build.
    std::filesystem::path link =
        node_.root() / ("var/lib/dkms/nvidia/kernel-" + running_ + "-" + arch_);
    EXPECT_EQ(std::filesystem::read_symlink(link).string(), "550.54.14/" + running_ + "/" + arch_);
    // Installing again changes nothing and says so.
    RunResult again = Dkms("install nvidia/550.54.14");
    EXPECT_EQ(again.status, 0);
    EXPECT_EQ(again.out, "Module nvidia/550.54.14 already installed on kernel " + running_ + " (" +
                             arch_ + ").\n");
    ASSERT_EQ(Dkms("remove nvidia/550.54.14 --all").status, 0);
  }
}

TEST_F(DkmsStandin, PeermemRecordsWhetherOfedsSymbolsWereThereAtBuildTime) {
  Release("2.8.7");
  const std::string peermem = Installed(false, running_, "nvidia-peermem");
  ASSERT_EQ(Dkms("install nvidia/550.54.14").status, 0);
  EXPECT_NE(ReadFile(node_.root() / peermem)
                .find("peer memory: none (built without MLNX_OFED's ib_core symbols)"),
            std::string::npos);
  // OFED installed afterwards changes nothing until the module is rebuilt.
  node_.Write("usr/src/ofa_kernel/default/Module.symvers",
              "0x1\tib_register_peer_memory_client\tdrivers/infiniband/core/ib_core\t"
              "EXPORT_SYMBOL\t\n");
  node_.Write("usr/lib/gpuctl-lab/ofed-release", "24.01-0.3.3.1\n");
  ASSERT_EQ(Dkms("install nvidia/550.54.14").status, 0);
  EXPECT_EQ(ReadFile(node_.root() / peermem).find("MLNX_OFED 24"), std::string::npos);
  ASSERT_EQ(Dkms("remove nvidia/550.54.14 -k " + running_).status, 0);
  ASSERT_EQ(Dkms("install nvidia/550.54.14 -k " + running_).status, 0);
  EXPECT_NE(ReadFile(node_.root() / peermem).find("peer memory: MLNX_OFED 24.01-0.3.3.1"),
            std::string::npos);
  EXPECT_EQ(ReadFile(node_.root() / Installed(false, running_, "nvidia")).find("peer memory"),
            std::string::npos);
}

TEST_F(DkmsStandin, AKernelWithoutHeadersGetsTheRealError) {
  const std::string k = kNext;
  node_.Write("lib/modules/" + k + "/modules.dep", "");  // the image, not its headers
  Release("2.8.7");
  ASSERT_EQ(Dkms("add -m nvidia -v 550.54.14").status, 0);
  RunResult build = Dkms("build -m nvidia -v 550.54.14 -k " + k, true);
  EXPECT_EQ(build.status, 1);
  EXPECT_EQ(build.out, "Error! Your kernel headers for kernel " + k +
                           " cannot be found.\n"
                           "Please install the linux-headers-" +
                           k +
                           " package or use the "
                           "--kernelsourcedir option to tell DKMS where it's located.\n");
  // 2.8's autoinstall reports a failed build and still exits 0.
  RunResult auto28 = Dkms("autoinstall -k " + k, true);
  EXPECT_EQ(auto28.status, 0);
  EXPECT_NE(auto28.out.find("Error! Your kernel headers for kernel " + k + " cannot be found."),
            std::string::npos);

  Release("3.1.4");
  build = Dkms("build -m nvidia -v 550.54.14 -k " + k, true);
  EXPECT_EQ(build.status, 1);
  EXPECT_EQ(build.out, "\nError! Your kernel headers for kernel " + k +
                           " cannot be found at /lib/modules/" + k + "/build or /lib/modules/" + k +
                           "/source.\n"
                           "Please install the linux-headers-" +
                           k +
                           " package or use the "
                           "--kernelsourcedir option to tell DKMS where it's located.\n");
  // 3.x's autoinstall fails with 11, naming the module and its error code.
  RunResult auto3 = Dkms("autoinstall -k " + k, true);
  EXPECT_EQ(auto3.status, 11);
  EXPECT_NE(auto3.out.find("Autoinstall on " + k + " failed for module(s) nvidia(1).\n"),
            std::string::npos);
  EXPECT_NE(auto3.out.find("Error! One or more modules failed to install during autoinstall.\n"),
            std::string::npos);
  EXPECT_EQ(Dkms("status -k " + k).out, "nvidia/550.54.14: added\n");
  EXPECT_FALSE(Exists(Installed(true, k, "nvidia")));
}

TEST_F(DkmsStandin, HeadersArrivingLetAutoinstallBuildForTheNextKernel) {
  for (bool v3 : {false, true}) {
    SCOPED_TRACE(v3 ? "3.1.4" : "2.8.7");
    const std::string k = kNext;
    Release(v3 ? "3.1.4" : "2.8.7");
    node_.Write("lib/modules/" + k + "/modules.dep", "");
    ASSERT_EQ(Dkms("add -m nvidia -v 550.54.14").status, 0);
    ASSERT_EQ(Dkms("install -m nvidia -v 550.54.14").status, 0);
    EXPECT_NE(Dkms("build -m nvidia -v 550.54.14 -k " + k).status, 0);
    // What linux-headers-K / kernel-devel adds: build/ with include/ in it.
    std::filesystem::create_directories(node_.root() / ("lib/modules/" + k + "/build/include"));
    ASSERT_EQ(Dkms("autoinstall -k " + k).status, 0);
    EXPECT_EQ(Dkms("status -k " + k).out,
              "nvidia/550.54.14, " + k + ", " + arch_ + ": installed\n");
    for (const char* module : kModules) EXPECT_TRUE(Exists(Installed(v3, k, module))) << module;
    EXPECT_EQ(Lines(Dkms("status").out).size(), 2u);  // the running kernel's and K's
    ASSERT_EQ(Dkms("remove -m nvidia -v 550.54.14 --all").status, 0);
    std::filesystem::remove_all(node_.root() / "lib/modules");
    RunningHeaders();
  }
}

TEST_F(DkmsStandin, TheRunningKernelWithoutHeadersGetsNoModuleEither) {
  std::filesystem::remove_all(node_.root() / "lib/modules");
  Release("2.8.7");
  RunResult install = Dkms("install -m nvidia -v 550.54.14", true);
  EXPECT_EQ(install.status, 1);
  EXPECT_NE(
      install.out.find("Error! Your kernel headers for kernel " + running_ + " cannot be found."),
      std::string::npos)
      << install.out;
  EXPECT_EQ(Dkms("status").out, "nvidia/550.54.14: added\n");
  EXPECT_FALSE(Exists(Installed(false, running_, "nvidia")));
}

TEST_F(DkmsStandin, RemoveTakesTheModuleOutOfEveryKernelAndTheTree) {
  Release("3.1.4");
  const std::string k = kNext;
  std::filesystem::create_directories(node_.root() / ("lib/modules/" + k + "/build/include"));
  ASSERT_EQ(Dkms("install -m nvidia -v 550.54.14").status, 0);  // adds it first, as DKMS does
  ASSERT_EQ(Dkms("install -m nvidia -v 550.54.14 -k " + k).status, 0);
  // One kernel only: the other keeps its module.
  ASSERT_EQ(Dkms("remove -m nvidia -v 550.54.14 -k " + k).status, 0);
  EXPECT_FALSE(Exists(Installed(true, k, "nvidia")));
  EXPECT_EQ(Dkms("status").out, "nvidia/550.54.14, " + running_ + ", " + arch_ + ": installed\n");
  ASSERT_EQ(Dkms("remove -m nvidia -v 550.54.14 --all").status, 0);
  EXPECT_EQ(Dkms("status").out, "");
  EXPECT_FALSE(Exists(Installed(true, running_, "nvidia")));
  EXPECT_FALSE(Exists("var/lib/dkms/nvidia/550.54.14"));
  // Not in the tree any more: the real message and exit code 3.
  RunResult again = Dkms("remove -m nvidia -v 550.54.14 --all", true);
  EXPECT_EQ(again.status, 3);
  EXPECT_EQ(
      again.out,
      "\nError! The module/version combo: nvidia/550.54.14 is not located in the DKMS tree.\n");
}

}  // namespace
}  // namespace gpuctl::testing
