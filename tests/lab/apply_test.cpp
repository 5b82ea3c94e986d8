// apply, check and plan against a lab (issue: apply and check): a fresh apply
// converges, a second one sends no change, drift is planned, checked and
// repaired, saved plans refuse drift, interrupted runs resume, locks refuse a
// concurrent apply, and rolling reboots keep to their batch.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Lab;
using test::PollUntil;
using test::Quote;
using test::ReadFile;
using test::Result;
using test::Shell;
namespace fs = std::filesystem;

// One lab for the whole suite: the first case takes it from bare nodes to
// converged (an apply cut off on one node, then resumed), and each later
// case starts from that converged lab, makes the drift it needs by hand and
// leaves the lab converged again. A case run alone (--gtest_filter) applies
// first if the lab is still bare (Converged()).
class ApplyLabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::MissingPrerequisite().empty()) return;
    // What apply itself does (resume, locks, drift, rolling reboots) shows on
    // the OS and GPU layers, reboots included, without the whole stack.
    test::OnlySteps("os,gpu");
    lab_ = new Lab("a" + std::to_string(getpid()));
    if (!lab_->Up(&up_log_, "--profile mixed")) return;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
    fs::create_directories(runs_);
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
  }

  // gpuctl with stdout+stderr; `args` may use {inv} for the lab's inventory.
  static Result Gpuctl(std::string args) {
    const std::string inv = Quote(lab_->Env("LAB_INVENTORY"));
    for (auto pos = args.find("{inv}"); pos != std::string::npos; pos = args.find("{inv}")) {
      args.replace(pos, 5, inv);
    }
    return Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " " + args + " 2>&1 </dev/null");
  }
  static std::string RunDir(const std::string& name) { return (runs_ / name).string(); }
  // The lab converged: applies once if no case has yet.
  static void Converged() {
    if (converged_) return;
    const Result apply = Gpuctl("apply --yes {inv} --run-dir " + RunDir("converge"));
    ASSERT_EQ(apply.status, 0) << apply.out;
    converged_ = true;
  }

  static Lab* lab_;
  static std::string up_log_;
  static fs::path runs_;
  static bool converged_;
};

Lab* ApplyLabTest::lab_ = nullptr;
std::string ApplyLabTest::up_log_;
fs::path ApplyLabTest::runs_;
bool ApplyLabTest::converged_ = false;

// Needs the bare lab, so it comes first.
TEST_F(ApplyLabTest, AnApplyCutOffByALostNodeResumesAndConverges) {
  ASSERT_FALSE(converged_) << "this case needs the bare lab: run it first";
  const Result plan = Gpuctl("plan {inv}");
  EXPECT_EQ(plan.status, 2) << plan.out;

  // Start an apply, and once worker1 is mid-run, kill its sshd and every
  // session: the run loses that node while the others go on.
  const std::string first = RunDir("cut");
  const std::string command = std::string(GPUCTL_BINARY) + " apply --yes " +
                              Quote(lab_->Env("LAB_INVENTORY")) + " --run-dir " + first + " >" +
                              first + ".log 2>&1";
  std::thread apply([&] { Shell(command); });
  const bool started = PollUntil(std::chrono::seconds(120), [&] {
    return ReadFile(fs::path(first) / "journal.jsonl")
               .find("\"node\":\"worker1\",\"step\":\"os.sysctl\"") != std::string::npos;
  });
  EXPECT_TRUE(started);
  Shell(lab_->Tool("exec worker1 pkill -KILL sshd") + " >/dev/null 2>&1");
  apply.join();
  const std::string log = ReadFile(first + ".log");
  EXPECT_NE(log.find("worker1"), std::string::npos) << log;

  // sshd comes back (systemd restarts it); a plain re-run continues.
  ASSERT_TRUE(PollUntil(std::chrono::seconds(60),
                        [&] { return lab_->Ssh("worker1", "true").status == 0; }));
  const Result resume = Gpuctl("apply --yes {inv} --run-dir " + RunDir("resume"));
  ASSERT_EQ(resume.status, 0) << log << "\n---\n" << resume.out;
  converged_ = true;
  EXPECT_GT(ChangesIn(first) + ChangesIn(RunDir("resume")), 10);
  const Result check = Gpuctl("check {inv}");
  EXPECT_EQ(check.status, 0) << check.out;
}

TEST_F(ApplyLabTest, AConvergedLabIsHeldAndASecondApplySendsNoChange) {
  Converged();
  // Installed through gpuctl's transport into each family's real database,
  // and held there by gpu.driver-hold.
  EXPECT_EQ(lab_->Ssh("worker1", "dpkg-query -W -f='${Status}' nvidia-driver-550").out,
            "hold ok installed");
  EXPECT_EQ(lab_->Ssh("worker2", "rpm -q --qf '%{NAME}' cuda-drivers-550").out, "cuda-drivers-550");
  // The fresh nodes had no headers for the kernel they run; gpu.driver
  // installed them first (each family's package for it), so DKMS built the
  // module for that kernel, which the driver loaded at the reboot.
  EXPECT_EQ(lab_->Ssh("worker1", "dpkg-query -W -f='${Status}' linux-headers-$(uname -r)").out,
            "install ok installed");
  EXPECT_EQ(lab_->Ssh("worker2", "rpm -q kernel-devel-$(uname -r) >/dev/null; echo $?").out, "0\n");
  for (const char* node : {"worker1", "worker2"}) {
    EXPECT_NE(lab_->Ssh(node, "dkms status -k $(uname -r)").out.find(": installed"),
              std::string::npos)
        << node;
  }
  // os.memlock on the GPU nodes: services may pin memory (systemd's
  // default), and so may an ssh login and a plain user's session where the
  // node may raise limits at all (docs/standins.md: the lab's nodes, like
  // the machine they run on, lack CAP_SYS_RESOURCE).
  for (const char* node : {"worker1", "worker2"}) {
    SCOPED_TRACE(node);
    EXPECT_EQ(lab_->Ssh(node, "systemctl show -p DefaultLimitMEMLOCK --value").out, "infinity\n");
    EXPECT_EQ(lab_->Ssh(node,
                        "grep -c '^[*a-z]* [a-z]* memlock unlimited$' "
                        "/etc/security/limits.d/90-gpuctl-memlock.conf")
                  .out,
              "4\n");
    if (lab_->Ssh(node, "capsh --has-b=cap_sys_resource 2>/dev/null && echo yes").out == "yes\n") {
      EXPECT_EQ(lab_->Ssh(node, "ulimit -l").out, "unlimited\n");
      EXPECT_EQ(lab_->Ssh(node, "runuser -u nobody -- sh -c 'ulimit -l'").out, "unlimited\n");
    }
  }

  const Result again = Gpuctl("apply --yes {inv} --run-dir " + RunDir("second"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("No changes."), std::string::npos) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("second")), 0);
  EXPECT_EQ(Gpuctl("plan {inv}").status, 0);
}

TEST_F(ApplyLabTest, DriftIsPlannedAsExactlyOneStepCheckedAndRepaired) {
  Converged();
  ASSERT_EQ(lab_->Ssh("worker1", "rm /etc/modprobe.d/blacklist-nouveau.conf").status, 0);

  const Result plan = Gpuctl("--output json plan {inv}");
  EXPECT_EQ(plan.status, 2) << plan.out;
  const auto doc = nlohmann::json::parse(plan.out.substr(plan.out.find('{')), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << plan.out;
  std::vector<std::string> changes;
  for (const auto& item : doc["items"]) {
    if (item["state"] != "ok")
      changes.push_back(item["node"].get<std::string>() + " " + item["step"].get<std::string>());
  }
  EXPECT_EQ(changes, std::vector<std::string>{"worker1 gpu.nouveau-blacklist"});

  const Result check = Gpuctl("check {inv}");
  EXPECT_EQ(check.status, 2) << check.out;
  EXPECT_NE(check.out.find("worker1: /etc/modprobe.d/blacklist-nouveau.conf is missing or differs "
                           "(gpu.nouveau-blacklist)"),
            std::string::npos)
      << check.out;

  const Result repair = Gpuctl("apply --yes {inv} --run-dir " + RunDir("repair"));
  EXPECT_EQ(repair.status, 0) << repair.out;
  EXPECT_EQ(ChangesIn(RunDir("repair")), 1);
  EXPECT_EQ(Gpuctl("check {inv}").status, 0);
}

TEST_F(ApplyLabTest, SavedPlanIsRefusedAfterDriftAndNamesNodeAndStep) {
  Converged();
  const std::string file = "/etc/modules-load.d/gpuctl-k8s.conf";
  ASSERT_EQ(lab_->Ssh("master1", "rm " + file).status, 0);
  const std::string saved = RunDir("saved.json");
  ASSERT_EQ(Gpuctl("plan {inv} --out " + saved).status, 2);
  // Someone fixes it by hand between plan and apply.
  ASSERT_EQ(lab_->Ssh("master1", "printf 'overlay\\nbr_netfilter\\n' > " + file).status, 0);
  const Result apply = Gpuctl("apply " + saved + " --run-dir " + RunDir("refused"));
  EXPECT_EQ(apply.status, 1) << apply.out;
  EXPECT_NE(apply.out.find("master1 os.modules: was change"), std::string::npos) << apply.out;
  EXPECT_EQ(ChangesIn(RunDir("refused")), 0);
  EXPECT_EQ(Gpuctl("check {inv}").status, 0) << "the hand-made file is the one gpuctl writes";
}

TEST_F(ApplyLabTest, ASecondApplyIsRefusedByTheNodeLocks) {
  Converged();
  // Drift whose repair reboots worker1, so the first run holds its locks for
  // seconds after its probe phase starts.
  ASSERT_EQ(lab_->Ssh("worker1", "rm /etc/modprobe.d/blacklist-nouveau.conf").status, 0);
  const std::string first = RunDir("holder");
  std::thread apply([&] {
    Shell(std::string(GPUCTL_BINARY) + " apply --yes " + Quote(lab_->Env("LAB_INVENTORY")) +
          " --run-dir " + first + " >/dev/null 2>&1");
  });
  // The first run holds the locks from its lock phase until it ends.
  const bool probing = PollUntil(std::chrono::seconds(120), [&] {
    return ReadFile(fs::path(first) / "journal.jsonl").find("\"phase\":\"probe\"") !=
           std::string::npos;
  });
  EXPECT_TRUE(probing);
  const Result second = Gpuctl("apply --yes {inv} --run-dir " + RunDir("second-locked"));
  const bool first_still_running =
      ReadFile(fs::path(first) / "journal.jsonl").find("back after reboot") == std::string::npos;
  apply.join();
  if (first_still_running) {
    EXPECT_EQ(second.status, 1) << second.out;
    EXPECT_NE(second.out.find("locked by another apply"), std::string::npos) << second.out;
    EXPECT_EQ(ChangesIn(RunDir("second-locked")), 0);
  }
  // The lock is released when the first run ends.
  const Result after = Gpuctl("apply --yes {inv} --run-dir " + RunDir("after"));
  EXPECT_EQ(after.status, 0) << after.out;
  EXPECT_EQ(Gpuctl("check {inv}").status, 0);
}

TEST_F(ApplyLabTest, AStaleLockNeedsBreakLock) {
  Converged();
  ASSERT_EQ(lab_->Ssh("master1",
                      "mkdir -p /var/lib/gpuctl/lock && echo 'run=crashed host=elsewhere' > "
                      "/var/lib/gpuctl/lock/holder")
                .status,
            0);
  const Result refused = Gpuctl("apply --yes {inv} --run-dir " + RunDir("stale"));
  EXPECT_EQ(refused.status, 1) << refused.out;
  EXPECT_NE(refused.out.find("run=crashed host=elsewhere"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("--break-lock"), std::string::npos) << refused.out;
  const Result broken = Gpuctl("apply --yes --break-lock {inv} --run-dir " + RunDir("broken"));
  EXPECT_EQ(broken.status, 0) << broken.out;
  EXPECT_NE(broken.out.find("breaking lock held by: run=crashed host=elsewhere"), std::string::npos)
      << "what --break-lock overrode is said: " << broken.out;
}

// Its own lab: five nodes, so four GPU workers reboot in batches of two.
class RollingRebootLabTest : public test::LabCase {
 protected:
  std::string Shape() const override { return "--nodes 5"; }
  std::string Prefix() const override { return "r"; }
  std::string Only() const override { return "os,gpu"; }
};

TEST_F(RollingRebootLabTest, NeverMoreThanOneBatchDown) {
  const Result apply = Gpuctl("apply --yes --batch 2 --run-dir " + RunDir("rolling"));
  ASSERT_EQ(apply.status, 0) << apply.out;
  // Replay the journal: count nodes between "rebooting" and "back after reboot".
  std::ifstream in(fs::path(RunDir("rolling")) / "journal.jsonl");
  int down = 0;
  int max_down = 0;
  int reboots = 0;
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded() || e.value("event", "") != "note") continue;
    if (e.value("message", "") == "rebooting") {
      ++reboots;
      max_down = std::max(max_down, ++down);
    } else if (e.value("message", "") == "back after reboot") {
      --down;
    }
  }
  EXPECT_EQ(reboots, 4) << "every GPU worker rebooted once";
  EXPECT_LE(max_down, 2);
  EXPECT_GE(max_down, 1);
}

}  // namespace
}  // namespace gpuctl
