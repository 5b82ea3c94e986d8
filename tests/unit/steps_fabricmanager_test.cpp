// gpu.fabricmanager (playbooks/20-gpu.yaml) against stubbed node tools: the
// loaded driver (nvidia-smi from a real H100 capture, driver 580.159.04)
// names the exact Fabric Manager; the probe says why the fabric is not up;
// the verification asks cuInit through a real (stub) libcuda.so.1, built
// from the lab's source, and reads nvidia-smi -q's fabric state; the changes
// pin the driver's version on apt and dnf and hold it.
#include <gtest/gtest.h>

#include <regex>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::Slurp;
using testing::StepHarness;

constexpr const char* kFabricmanagerInventory = R"(cluster: t
versions: {driver_branch: "580"}
nodes:
  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}
  - name: u
    address: 198.18.0.2
    os: ubuntu-22.04
    roles: [worker]
    hardware: {gpus: {model: "NVIDIA H100 80GB HBM3", count: 8, nvswitch: true}}
  - name: r
    address: 198.18.0.3
    os: rocky-9
    roles: [worker]
    hardware: {gpus: {model: "NVIDIA H100 80GB HBM3", count: 8, nvswitch: true}}
)";
constexpr const char* kStep = "gpu.fabricmanager";
constexpr const char* kNotRunning = "NVSwitch fabric not initialised (Fabric Manager not running)";

class FabricManagerStepTest : public ::testing::Test {
 protected:
  FabricManagerStepTest() : h_(kFabricmanagerInventory) {
    h_.UseStub("nvidia-smi");
    h_.SetEnv("STUB_CSV", StepHarness::Fixture("nvidia-smi/h100-80gb-hbm3/query_csv.txt"));
    h_.SetEnv("STUB_GPUS", "8");
    h_.SetEnv("CALLS", (h_.dir() / "calls").string());
  }
  // dpkg-query and rpm answer VERSION for the Fabric Manager ("" for none).
  void Installed(const std::string& version) {
    h_.Stub("dpkg-query", version.empty() ? "exit 1" : "printf '%s' '" + version + "'");
    h_.Stub("rpm", version.empty()
                       ? "exit 1"
                       : "case \"$*\" in *--qf*) printf '%s' '" + version + "' ;; esac\nexit 0");
  }
  // systemctl: nvidia-fabricmanager's state; every other call recorded.
  void Service(const std::string& active, const std::string& enabled) {
    h_.Stub("systemctl",
            "case \"$1\" in\n"
            "  is-active) [ \"$2\" = --quiet ] || echo " +
                active + "; [ " + active +
                " = active ] ;;\n"
                "  is-enabled) [ \"$2\" = --quiet ] || echo " +
                enabled + "; [ " + enabled +
                " = enabled ] ;;\n"
                "  *) echo \"systemctl $*\" >>\"$CALLS\" ;;\nesac");
  }
  std::string Calls() { return Slurp(h_.dir() / "calls"); }
  StepHarness h_;
};

TEST_F(FabricManagerStepTest, AppliesOnlyToNvswitchBoards) {
  const Step* step = h_.catalog().Find(kStep);
  ASSERT_NE(step, nullptr);
  EXPECT_TRUE(step->AppliesTo(*h_.inventory().Find("u"), h_.inventory()));
  EXPECT_FALSE(step->AppliesTo(*h_.inventory().Find("m"), h_.inventory()));
}

TEST_F(FabricManagerStepTest, ProbeWaitsForTheDriver) {
  h_.Stub("nvidia-smi", "exit 9");
  const auto run = h_.Probe(kStep, "u");
  EXPECT_EQ(run.status, 3) << run.out;
}

TEST_F(FabricManagerStepTest, ProbeWaitsForADriverAboutToChangeBranch) {
  // The inventory wants 570 while 580 is loaded: gpu.driver moves it first,
  // and this step is probed again after (not left "ok" at the old version).
  StepHarness h(std::regex_replace(kFabricmanagerInventory, std::regex("\"580\""), "\"570\""));
  h.UseStub("nvidia-smi");
  h.SetEnv("STUB_CSV", StepHarness::Fixture("nvidia-smi/h100-80gb-hbm3/query_csv.txt"));
  const auto run = h.Probe(kStep, "u");
  EXPECT_EQ(run.status, 3) << run.out;
  EXPECT_EQ(run.out,
            "driver 580.159.04 is loaded, branch 570 is wanted: Fabric Manager follows the "
            "driver\n");
}

TEST_F(FabricManagerStepTest, ProbeSaysTheFabricIsNotInitialisedAndWhy) {
  Service("inactive", "disabled");
  Installed("");
  auto run = h_.Probe(kStep, "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, std::string(kNotRunning) + ": nvidia-fabricmanager-580 is not installed\n");

  Installed("580.95.05-1");
  run = h_.Probe(kStep, "u");
  EXPECT_EQ(run.out, std::string(kNotRunning) +
                         ": Fabric Manager 580.95.05 does not match the driver "
                         "580.159.04\n");

  Installed("580.159.04-1");
  run = h_.Probe(kStep, "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, std::string(kNotRunning) + "\n");

  Service("failed", "enabled");
  run = h_.Probe(kStep, "r");  // rpm's name on dnf
  EXPECT_EQ(run.out, std::string(kNotRunning) +
                         ": nvidia-fabricmanager.service failed (journalctl -u "
                         "nvidia-fabricmanager)\n");
}

TEST_F(FabricManagerStepTest, ProbePassesOnlyRunningEnabledAndMatching) {
  Installed("580.159.04-1");
  Service("active", "enabled");
  EXPECT_EQ(h_.Probe(kStep, "u").status, 0);
  EXPECT_EQ(h_.Probe(kStep, "r").status, 0);
  Service("active", "disabled");
  const auto run = h_.Probe(kStep, "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "nvidia-fabricmanager is not enabled at boot\n");
}

TEST_F(FabricManagerStepTest, VerifyInitialisesCudaAndReadsTheFabricState) {
  if (std::system("command -v cc >/dev/null && test -x /usr/bin/python3") != 0) {
    GTEST_SKIP() << "needs a C compiler and /usr/bin/python3";
  }
  // libcuda.so.1 as the lab builds it; its cuInit asks GPUCTL_LAB_CUDA_STATE.
  const std::string source =
      std::string(GPUCTL_SOURCE_DIR) + "/lab/standins/libnvidia-compute/libcuda.c";
  ASSERT_EQ(
      std::system(("sed s/@CUDA_VERSION@/13000/ '" + source + "' | cc -shared -fPIC -x c -o '" +
                   (h_.dir() / "libcuda.so.1").string() + "' -")
                      .c_str()),
      0);
  h_.SetEnv("LD_LIBRARY_PATH", h_.dir().string());
  h_.Stub("cuda-state", "echo \"$CUINIT\"");
  h_.SetEnv("GPUCTL_LAB_CUDA_STATE", (h_.dir() / "bin/cuda-state").string());
  h_.SetEnv("CUINIT", "802 0");
  auto run = h_.Verify(kStep, "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "CUDA cannot initialise: cuInit: error 802, system not yet initialized\n");

  // CUDA starts; the real capture's fabric (no NVSwitch there) says N/A: fine.
  h_.SetEnv("CUINIT", "0 8");
  const std::string q = StepHarness::FixtureText("nvidia-smi/h100-80gb-hbm3/q.txt");
  std::ofstream(h_.dir() / "q.txt") << q;
  h_.SetEnv("STUB_OTHER", (h_.dir() / "q.txt").string());
  run = h_.Verify(kStep, "u");
  EXPECT_EQ(run.status, 0) << run.out;

  // A Hopper GPU that has not joined the fabric.
  std::ofstream(h_.dir() / "q.txt")
      << std::regex_replace(q, std::regex("(\n    Fabric\n        State +: )N/A"), "$1In Progress");
  run = h_.Verify(kStep, "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "1 GPU(s) not in the NVLink fabric: State In Progress, Status N/A\n");
}

TEST_F(FabricManagerStepTest, AptChangePinsTheDriversVersionAndHoldsIt) {
  Installed("");
  Service("inactive", "disabled");
  h_.Stub("apt-cache",
          "echo ' nvidia-fabricmanager-580 | 580.159.04-1 | http://mirror/cuda  Packages'\n"
          "echo ' nvidia-fabricmanager-580 | 580.95.05-1 | http://mirror/cuda  Packages'");
  h_.Stub("apt-mark",
          "echo \"apt-mark $*\" >>\"$CALLS\"\n"
          "[ \"$1\" = showhold ] && echo nvidia-fabricmanager-570\nexit 0");
  h_.Stub("apt-get", "echo \"apt-get $*\" >>\"$CALLS\"");
  h_.Stub("dpkg", "exit 0");
  const auto run = h_.Change(kStep, "u");
  ASSERT_EQ(run.status, 0) << run.out;
  const std::string calls = Calls();
  EXPECT_NE(calls.find("apt-mark unhold nvidia-fabricmanager-570\n"), std::string::npos) << calls;
  // A lower release than the installed one is a downgrade, which apt-get -y
  // makes only when told.
  EXPECT_NE(calls.find(" install --allow-downgrades nvidia-fabricmanager-580=580.159.04-1\n"),
            std::string::npos)
      << calls;
  EXPECT_NE(calls.find("apt-mark hold nvidia-fabricmanager-580\n"), std::string::npos) << calls;
  EXPECT_NE(calls.find("systemctl enable --quiet nvidia-fabricmanager\nsystemctl restart "
                       "nvidia-fabricmanager\n"),
            std::string::npos)
      << calls;
}

TEST_F(FabricManagerStepTest, DnfChangeInstallsOrDowngradesToTheDriversVersion) {
  Service("inactive", "disabled");
  h_.Stub("dnf",
          "echo \"dnf $*\" >>\"$CALLS\"\n"
          "case \"$*\" in *repoquery*) printf '%s\\n' 580.95.05-1 580.159.04-1 "
          "590.10.01-1 ;; esac");
  Installed("");
  ASSERT_EQ(h_.Change(kStep, "r").status, 0);
  EXPECT_NE(Calls().find("dnf -y -q --disableexcludes=main install "
                         "nvidia-fabric-manager-580.159.04-1\n"),
            std::string::npos)
      << Calls();
  std::filesystem::remove(h_.dir() / "calls");
  Installed("590.10.01-1");
  ASSERT_EQ(h_.Change(kStep, "r").status, 0);
  EXPECT_NE(Calls().find("--disableexcludes=main downgrade nvidia-fabric-manager-580.159.04-1\n"),
            std::string::npos)
      << Calls();
  EXPECT_NE(Calls().find("systemctl restart nvidia-fabricmanager\n"), std::string::npos);
}

TEST_F(FabricManagerStepTest, ChangeNamesTheMissingRelease) {
  Installed("");
  Service("inactive", "disabled");
  h_.Stub("dnf", "case \"$*\" in *repoquery*) echo 580.95.05-1 ;; esac");
  const auto run = h_.Change(kStep, "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("no nvidia-fabric-manager 580.159.04 (the loaded driver's version) in "
                         "the node's repositories; they have: 580.95.05-1"),
            std::string::npos)
      << run.out;
}

TEST_F(FabricManagerStepTest, DriverHoldOnDnfHoldsFabricManagerAndWaitsForABranchSwitch) {
  // rpm -qa lists the driver's packages (Fabric Manager among them); no
  // versionlock plugin here, and dnf.conf excludes none of them yet.
  h_.Stub("rpm",
          "case \"$*\" in\n"
          "  *-qa*) printf '%s\\n' cuda-drivers cuda-drivers-580 nvidia-driver-cuda "
          "nvidia-fabric-manager ;;\n"
          "  *cuda-drivers-580*) exit 0 ;;\n"
          "  *) exit 1 ;;\nesac");
  auto run = h_.Probe("gpu.driver-hold", "r");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find(" nvidia-fabric-manager"), std::string::npos) << run.out;
  // Branch 570 wanted while 580's packages are installed: gpu.driver moves
  // them first, so what to hold is known only after it.
  StepHarness h(std::regex_replace(kFabricmanagerInventory, std::regex("\"580\""), "\"570\""));
  h.Stub("rpm", "exit 1");
  run = h.Probe("gpu.driver-hold", "r");
  EXPECT_EQ(run.status, 3) << run.out;
  EXPECT_EQ(run.out, "cuda-drivers-570 is not installed yet\n");
}

}  // namespace
}  // namespace gpuctl
