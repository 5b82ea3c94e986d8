// NVSwitch boards and Fabric Manager (gpu.fabricmanager) on a `--profile
// nvswitch` lab: worker1 (Ubuntu, apt, 8x A100) and worker2 (Rocky, dnf, 8x
// H100), both HGX boards. With the driver alone nvidia-smi lists every GPU
// while CUDA fails with 802 and check names the missing Fabric Manager; apply
// installs it at the driver's exact version, held, running; a Fabric Manager
// of another version refuses to start, and apply puts the right one back; a
// driver branch change moves Fabric Manager with it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <fmt/format.h>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Lab;
using test::Quote;
using test::Result;
using test::Shell;
using test::Trim;
namespace fs = std::filesystem;

const std::vector<std::string> kBoards = {"worker1", "worker2"};

// What every CUDA program does first, through the node's libcuda.so.1.
constexpr const char* kCuInit =
    "python3 -c 'import ctypes; c = ctypes.CDLL(\"libcuda.so.1\"); r = c.cuInit(0); "
    "s = ctypes.c_char_p(); c.cuGetErrorString(r, ctypes.byref(s)); print(r, s.value.decode())'";

class FabricManagerLabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::MissingPrerequisite().empty()) return;
    lab_ = new Lab(fmt::format("fm{}", getpid()));
    if (!lab_->Up(&up_log_, "--profile nvswitch")) return;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
    // The driver only: a board as a runbook without Fabric Manager leaves it.
    test::OnlySteps("gpu.driver");
    driver_apply_ = Gpuctl("apply --yes --run-dir " + RunDir("driver"));
    test::OnlySteps("gpu");
  }
  static void TearDownTestSuite() {
    test::OnlySteps("");
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
    delete lab_;
    lab_ = nullptr;
  }
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_FALSE(lab_->nodes().empty()) << up_log_;
    ASSERT_EQ(driver_apply_.status, 0) << driver_apply_.out;
  }

  static Result Gpuctl(const std::string& args) {
    return GpuctlWith(lab_->Env("LAB_INVENTORY"), args);
  }
  // gpuctl ARGS INVENTORY: an inventory the test derived from the lab's.
  static Result GpuctlWith(const std::string& inventory, const std::string& args) {
    return Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " " + args + " " + Quote(inventory) +
                 " 2>&1 </dev/null");
  }
  static std::string RunDir(const std::string& name) { return (runs_ / name).string(); }
  static std::string On(const std::string& node, const std::string& command) {
    return Trim(lab_->Ssh(node, command).out);
  }

  static Lab* lab_;
  static std::string up_log_;
  static fs::path runs_;
  static Result driver_apply_;
};

Lab* FabricManagerLabTest::lab_ = nullptr;
std::string FabricManagerLabTest::up_log_;
fs::path FabricManagerLabTest::runs_;
Result FabricManagerLabTest::driver_apply_;

TEST_F(FabricManagerLabTest, CudaWaitsForFabricManagerOfTheDriversVersion) {
  // Before: the GPUs are all listed, CUDA cannot start, check says why.
  for (const std::string& node : kBoards) {
    SCOPED_TRACE(node);
    EXPECT_EQ(On(node, "nvidia-smi -L | wc -l"), "8");
    EXPECT_EQ(On(node, kCuInit), "802 system not yet initialized");
  }
  EXPECT_NE(On("worker2", "nvidia-smi -q | grep -m1 -A1 '^    Fabric$'").find("Not Started"),
            std::string::npos);
  const Result before = Gpuctl("check");
  EXPECT_EQ(before.status, 2) << before.out;
  for (const std::string& node : kBoards) {
    EXPECT_NE(before.out.find(node + ": NVSwitch fabric not initialised (Fabric Manager not "
                                     "running)"),
              std::string::npos)
        << before.out;
  }

  // apply: Fabric Manager at the driver's version, held, running; CUDA starts.
  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("fm"));
  ASSERT_EQ(apply.status, 0) << apply.out;
  EXPECT_EQ(On("worker1", "dpkg-query -W -f='${Version}' nvidia-fabricmanager-550"),
            "550.127.05-1");
  EXPECT_NE(On("worker1", "apt-mark showhold").find("nvidia-fabricmanager-550"), std::string::npos);
  EXPECT_EQ(On("worker2", "rpm -q --qf '%{VERSION}-%{RELEASE}' nvidia-fabric-manager"),
            "550.127.05-1");
  EXPECT_NE(On("worker2", "grep ^excludepkgs= /etc/dnf/dnf.conf").find("nvidia-fabric-manager"),
            std::string::npos);
  for (const std::string& node : kBoards) {
    SCOPED_TRACE(node);
    EXPECT_EQ(On(node,
                 "systemctl is-enabled nvidia-fabricmanager; systemctl is-active "
                 "nvidia-fabricmanager"),
              "enabled\nactive");
    EXPECT_EQ(On(node, kCuInit), "0 no error");
  }
  EXPECT_EQ(
      On("worker2", "nvidia-smi -q | grep -A2 '^    Fabric$' | grep -c 'Completed\\|Success'"),
      "16");
  const Result check = Gpuctl("check");
  EXPECT_EQ(check.status, 0) << check.out;
  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("fm-again"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("fm-again")), 0) << again.out;
}

TEST_F(FabricManagerLabTest, AnotherVersionRefusesToStartAndApplyRestoresTheDrivers) {
  const Result first = Gpuctl("apply --yes --run-dir " + RunDir("mismatch-first"));
  ASSERT_EQ(first.status, 0) << first.out;
  // An admin's upgrade of Fabric Manager alone, past its hold, to branch 570.
  On("worker1",
     "apt-mark unhold nvidia-fabricmanager-550 >/dev/null; DEBIAN_FRONTEND=noninteractive "
     "apt-get install -y -q nvidia-fabricmanager-570 >/dev/null 2>&1");
  On("worker2",
     "dnf -y -q --disableexcludes=main install nvidia-fabric-manager-570.86.15 >/dev/null 2>&1");
  const std::string refused =
      "fabric manager NVIDIA GPU driver interface version 570.86.15 don't match with driver "
      "version 550.127.05. Please update with matching NVIDIA driver package.";
  for (const std::string& node : kBoards) {
    SCOPED_TRACE(node);
    const Result restart = lab_->Ssh(node, "systemctl restart nvidia-fabricmanager 2>&1");
    EXPECT_NE(restart.status, 0) << restart.out;
    EXPECT_NE(On(node, "tail -n 1 /var/log/fabricmanager.log").find(refused), std::string::npos);
    EXPECT_NE(On(node, "journalctl -u nvidia-fabricmanager --no-pager -n 20").find(refused),
              std::string::npos);
    EXPECT_EQ(On(node, "systemctl is-active nvidia-fabricmanager"), "failed");
    EXPECT_EQ(On(node, kCuInit), "802 system not yet initialized");
  }
  const Result check = Gpuctl("check");
  EXPECT_EQ(check.status, 2) << check.out;
  EXPECT_NE(check.out.find("worker1: NVSwitch fabric not initialised (Fabric Manager not running): "
                           "nvidia-fabricmanager-550 is not installed"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("worker2: NVSwitch fabric not initialised (Fabric Manager not running): "
                           "Fabric Manager 570.86.15 does not match the driver 550.127.05"),
            std::string::npos)
      << check.out;

  const Result repair = Gpuctl("apply --yes --run-dir " + RunDir("repair"));
  ASSERT_EQ(repair.status, 0) << repair.out;
  EXPECT_EQ(On("worker1", "dpkg-query -W -f='${Version}' nvidia-fabricmanager-550"),
            "550.127.05-1");
  EXPECT_EQ(On("worker2", "rpm -q --qf '%{VERSION}' nvidia-fabric-manager"), "550.127.05");
  for (const std::string& node : kBoards) EXPECT_EQ(On(node, kCuInit), "0 no error") << node;
  EXPECT_EQ(Gpuctl("check").status, 0);
}

TEST_F(FabricManagerLabTest, ADriverReleaseWithoutItsFabricManagerIsRefusedBeforeAnyChange) {
  // The lab's CUDA repository has driver 560.35.03 but no Fabric Manager of
  // it (a mirror that took one and not the other): on an NVSwitch board that
  // driver could never run CUDA, so plan refuses and apply changes nothing.
  const fs::path inventory = runs_ / "inventory-560.yaml";
  std::ofstream(inventory) << test::ReadFile(lab_->Env("LAB_INVENTORY"))
                           << "versions:\n  driver: \"560.35.03\"\n";
  const auto gpuctl = [&](const std::string& args) { return GpuctlWith(inventory, args); };
  std::map<std::string, std::string> loaded;
  for (const std::string& node : kBoards) {
    loaded[node] =
        On(node, "nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1");
  }
  const Result plan = gpuctl("plan");
  EXPECT_EQ(plan.status, 1) << plan.out;
  EXPECT_NE(
      plan.out.find("x gpu.fabricmanager              refused: repository cuda offers no "
                    "nvidia-fabricmanager-560 560.35.03 (no nvidia-fabricmanager-560 at all)"),
      std::string::npos)
      << plan.out;
  EXPECT_NE(plan.out.find("x gpu.fabricmanager              refused: repository cuda offers no "
                          "nvidia-fabric-manager 560.35.03 (it has 580.95.05-1, 570.86.15-1, "
                          "550.127.05-1, ...); Fabric Manager runs only at its driver's release "
                          "(560.35.03): set versions.driver to a release that has one"),
            std::string::npos)
      << plan.out;
  EXPECT_NE(plan.out.find("2 changes cannot succeed as the inventory asks"), std::string::npos)
      << plan.out;

  const Result apply = gpuctl("apply --yes --run-dir " + RunDir("refused-560"));
  EXPECT_EQ(apply.status, 1) << apply.out;
  EXPECT_NE(apply.out.find("apply refuses to start"), std::string::npos) << apply.out;
  EXPECT_EQ(ChangesIn(RunDir("refused-560")), 0) << apply.out;
  for (const std::string& node : kBoards) {
    SCOPED_TRACE(node);
    EXPECT_EQ(On(node, "nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1"),
              loaded[node]);
  }
  EXPECT_EQ(On("worker1", "dpkg-query -W nvidia-driver-560 >/dev/null 2>&1; echo $?"), "1");
}

// MIG on both HGX boards (hardware.gpus.mig): GPUs 0-3 in seven 1g.10gb,
// GPU 4 in a 3g + 2g + 2 x 1g layout that fits only at gpuctl's placement,
// GPUs 5-7 whole. Persistence mode holds the GPUs, so the mode waits for the
// step's reboot; the instances come back after a reboot gpuctl did not ask
// for; `mig: []` turns it all off again.
TEST_F(FabricManagerLabTest, MigLayoutsAreMadeKeptOverRebootsAndUndone) {
  const std::string base = test::ReadFile(lab_->Env("LAB_INVENTORY"));
  const auto with_mig = [&](const std::string& name, const std::string& mig) {
    std::string text = base;
    const std::string key = "        nvswitch: true\n";
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
      text.insert(at + key.size(), mig);
    }
    const fs::path path = runs_ / name;
    std::ofstream(path) << text;
    return path.string();
  };
  const std::string layout =
      with_mig("inventory-mig.yaml",
               "        mig:\n"
               "          - gpus: 0-3\n"
               "            instances: {1g.10gb: 7}\n"
               "          - gpus: \"4\"\n"
               "            instances: {1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}\n");
  const std::string modes =
      "nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader | sort | uniq -c | "
      "tr -s ' ' | tr '\\n' ';'";
  const std::string devices = "nvidia-smi -L | grep -c '^  MIG '";

  const Result plan = GpuctlWith(layout, "plan");
  EXPECT_EQ(plan.status, 2) << plan.out;
  EXPECT_NE(plan.out.find("GPU 0: MIG mode Disabled (want Enabled)"), std::string::npos)
      << plan.out;
  const Result apply = GpuctlWith(layout, "apply --yes --run-dir " + RunDir("mig"));
  ASSERT_EQ(apply.status, 0) << apply.out;
  for (const std::string& node : kBoards) {
    SCOPED_TRACE(node);
    EXPECT_EQ(On(node, modes), " 3 Disabled; 5 Enabled;");
    EXPECT_EQ(On(node, devices), "32");
    EXPECT_EQ(On(node, "nvidia-smi mig -lgi | grep -c 'MIG 3g.40gb .* 4:4 '"), "1");
    EXPECT_EQ(On(node, "systemctl is-enabled gpuctl-mig"), "enabled");
    EXPECT_EQ(On(node, kCuInit), "0 no error");
  }
  EXPECT_EQ(GpuctlWith(layout, "check").status, 0);

  // A reboot gpuctl did not ask for: the driver loses the instances, the
  // unit makes them again before anything would use them.
  ASSERT_EQ(Shell(lab_->Tool("reboot worker2 --wait") + " 2>&1").status, 0);
  // ssh answers before boot has finished: wait for the boot's jobs (the
  // unit among them) rather than start anything.
  On("worker2", "timeout 300 systemctl is-system-running --wait");
  EXPECT_EQ(On("worker2", "systemctl is-active gpuctl-mig"), "active");
  EXPECT_EQ(On("worker2", devices), "32");
  const Result again = GpuctlWith(layout, "apply --yes --run-dir " + RunDir("mig-again"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("mig-again")), 0) << again.out;

  const std::string off = with_mig("inventory-mig-off.yaml", "        mig: []\n");
  const Result undo = GpuctlWith(off, "apply --yes --run-dir " + RunDir("mig-off"));
  ASSERT_EQ(undo.status, 0) << undo.out;
  for (const std::string& node : kBoards) {
    SCOPED_TRACE(node);
    EXPECT_EQ(On(node, modes), " 8 Disabled;");
    EXPECT_EQ(On(node, devices), "0");
    EXPECT_EQ(On(node, "test -e /etc/systemd/system/gpuctl-mig.service; echo $?"), "1");
  }
  EXPECT_EQ(GpuctlWith(off, "check").status, 0);
}

TEST_F(FabricManagerLabTest, ADriverBranchChangeMovesFabricManagerWithIt) {
  const Result first = Gpuctl("apply --yes --run-dir " + RunDir("branch-first"));
  ASSERT_EQ(first.status, 0) << first.out;
  // The same lab inventory, asking for branch 570.
  const fs::path inventory = runs_ / "inventory-570.yaml";
  std::ofstream(inventory) << test::ReadFile(lab_->Env("LAB_INVENTORY"))
                           << "versions:\n  driver_branch: \"570\"\n";
  const auto gpuctl = [&](const std::string& args) { return GpuctlWith(inventory, args); };
  const Result apply = gpuctl("apply --yes --run-dir " + RunDir("branch-570"));
  ASSERT_EQ(apply.status, 0) << apply.out;
  EXPECT_EQ(On("worker1", "dpkg-query -W -f='${Version}' nvidia-fabricmanager-570"), "570.86.15-1");
  EXPECT_EQ(
      On("worker1",
         "dpkg-query -W nvidia-fabricmanager-550 2>&1 | grep -c '^nvidia-fabricmanager-550\t550'"),
      "0");
  EXPECT_NE(On("worker1", "apt-mark showhold").find("nvidia-fabricmanager-570"), std::string::npos);
  EXPECT_EQ(On("worker2", "rpm -q --qf '%{VERSION}' nvidia-fabric-manager"), "570.86.15");
  for (const std::string& node : kBoards) {
    SCOPED_TRACE(node);
    EXPECT_EQ(On(node, "nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1"),
              "570.86.15");
    EXPECT_EQ(On(node, kCuInit), "0 no error");
  }
  const Result check = gpuctl("check");
  EXPECT_EQ(check.status, 0) << check.out;
}

}  // namespace
}  // namespace gpuctl
