#include "gpuctl/run/executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cluster_builder.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/run/prober.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using testing::OnRole;
using testing::SameNode;

// A fake cluster that remembers which steps were changed on which node, so
// probes and verifications answer like real idempotent steps.
class StatefulNodes {
 public:
  explicit StatefulNodes(FakeTransport& transport) {
    transport.AddHandler(
        [this](const std::string& node, const Command& c) -> std::optional<CommandResult> {
          std::unique_lock lock(mutex_);
          CommandResult r;
          r.exit_status = 0;
          const std::string& s = c.script;
          if (s.find("gpuctl-reboot-marker") != std::string::npos) {
            if (s.rfind("touch", 0) == 0) {
              ++reboots_[node];
              down_[node] = 1;  // down until the check after the next one
              changed_.notify_all();
            } else if (down_.count(node) != 0 && down_[node]-- == 1) {
              r.exit_status = 1;  // not rebooted yet: the executor tries again
            } else {
              down_.erase(node);
            }
            return r;
          }
          auto word = s.find(' ');
          const std::string verb = s.substr(0, word);
          std::string step = s.substr(s.rfind(' ') + 1);
          if (verb != "probe") {
            WatchReach(lock, node, verb, step);
          }
          if (verb == "probe" || verb == "verify") {
            if (broken_verify_.count({node, step}) && verb == "verify") {
              r.exit_status = 1;
              r.out = "still wrong";
            } else {
              r.exit_status = done_.count({node, step}) ? 0 : 1;
            }
          } else if (verb == "apt" || verb == "dnf") {
            order_.push_back(node + ":" + step);
            if (failing_.count({node, step})) {
              r.exit_status = 100;
              r.err = "E: Unable to locate package\n";
            } else {
              done_.insert({node, step});
            }
          }
          return r;
        });
  }
  void MarkDone(const std::string& node, const std::string& step) { done_.insert({node, step}); }
  // `step`'s change and verification record whether any of `nodes` is down
  // while they run.
  void Reaches(const std::string& step, std::vector<std::string> nodes) {
    reaches_[step] = std::move(nodes);
  }
  // `step`'s change waits until `event` happened: "down:NODE" (NODE went
  // down for a reboot) or "started:STEP" (STEP's change began on some node).
  void HoldChange(const std::string& step, const std::string& event) { holds_[step] = event; }
  std::vector<std::string> reach_violations() {
    std::lock_guard lock(mutex_);
    return violations_;
  }
  void FailChange(const std::string& node, const std::string& step) {
    failing_.insert({node, step});
  }
  void BreakVerify(const std::string& node, const std::string& step) {
    broken_verify_.insert({node, step});
  }
  std::vector<std::string> order() {
    std::lock_guard lock(mutex_);
    return order_;
  }
  int reboots(const std::string& node) {
    std::lock_guard lock(mutex_);
    return reboots_[node];
  }

 private:
  std::mutex mutex_;
  std::set<std::pair<std::string, std::string>> done_, failing_, broken_verify_;
  std::vector<std::string> order_;
  std::map<std::string, int> reboots_;
  std::map<std::string, int> down_;  // node -> reboot checks still answered "not yet"
  std::map<std::string, std::vector<std::string>> reaches_;
  std::map<std::string, std::string> holds_;
  std::set<std::string> events_;
  std::vector<std::string> violations_;
  std::condition_variable changed_;

  bool Happened(const std::string& event) {
    return event.rfind("down:", 0) == 0 ? down_.count(event.substr(5)) != 0
                                        : events_.count(event) != 0;
  }
  void RecordViolations(const std::string& node, const std::string& verb, const std::string& step) {
    for (const std::string& reached : reaches_[step]) {
      if (down_.count(reached) != 0) {
        violations_.push_back(
            fmt::format("{} of {} on {} ran while {} was down", verb, step, node, reached));
      }
    }
  }
  void WatchReach(std::unique_lock<std::mutex>& lock, const std::string& node,
                  const std::string& verb, const std::string& step) {
    if (verb == "apt" || verb == "dnf") {
      events_.insert("started:" + step);
      changed_.notify_all();
      if (auto hold = holds_.find(step); hold != holds_.end()) {
        changed_.wait(lock, [&] { return Happened(hold->second); });
      }
    }
    if (reaches_.count(step) == 0) {
      return;
    }
    RecordViolations(node, verb, step);
    if (verb == "verify") {
      // A bounded look for a reboot that must not start while this runs: if
      // the executor let one through, it shows up here.
      changed_.wait_for(lock, std::chrono::milliseconds(500), [&] {
        return std::any_of(reaches_[step].begin(), reaches_[step].end(),
                           [&](const std::string& n) { return down_.count(n) != 0; });
      });
      RecordViolations(node, verb, step);
    }
  }
};

std::size_t IndexOf(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<std::size_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

class ExecutorTest : public ::testing::Test {
 protected:
  Inventory inventory =
      MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                     MakeNode("worker2", Role::kWorker, OsFamily::kRhel)});
  std::vector<Step> steps{
      MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}),
      MakeStep("k8s.init", {Role::kMaster}, {SameNode("os.sysctl")}),
      MakeStep("k8s.join", {Role::kWorker},
               {SameNode("os.sysctl"), OnRole("k8s.init", Role::kMaster)}),
  };
  FakeTransport transport;
  StatefulNodes nodes{transport};
  Reporter quiet;
  std::map<std::string, std::string> errors;
  std::size_t max_reboots = 0;

  Plan Apply(ApplyOptions options = {}, RunOptions run = {}) {
    Catalog catalog = Catalog::FromSteps(steps);
    Plan plan = Plan::Build(inventory, catalog);
    RunContext context(inventory, catalog, plan, transport, quiet, run);
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase())
        .Add(MakeProbePhase())
        .Add(MakeApplyPhase(options, &max_reboots));
    pipeline.Run(context);
    errors = context.NodeErrors();
    return plan;
  }
};

TEST_F(ExecutorTest, AppliesWhatNeedsChangeAndNothingElse) {
  nodes.MarkDone("worker1", "os.sysctl");
  const Plan plan = Apply();
  EXPECT_EQ(plan.Find("worker1", "os.sysctl")->state, ItemState::kSatisfied);
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->state, ItemState::kApplied);
  EXPECT_EQ(plan.Summarize().applied, 5U);
  const auto order = nodes.order();
  EXPECT_EQ(std::count(order.begin(), order.end(), "worker1:os.sysctl"), 0);
  EXPECT_TRUE(errors.empty());
}

TEST_F(ExecutorTest, WorkersJoinOnlyAfterTheMastersInit) {
  Apply();
  const auto order = nodes.order();
  EXPECT_LT(IndexOf(order, "master1:k8s.init"), IndexOf(order, "worker1:k8s.join"));
  EXPECT_LT(IndexOf(order, "master1:k8s.init"), IndexOf(order, "worker2:k8s.join"));
}

TEST_F(ExecutorTest, ANodeWaitingOnOthersDoesNotHoldUpThoseNotYetStarted) {
  // One slot, so walkers are few: the master's last step waits for every
  // worker's join, which waits for the master's init. While the master's
  // walker waits, the workers must still be walked.
  steps.push_back(MakeStep("k8s.ready", {Role::kMaster}, {OnRole("k8s.join", Role::kWorker)}));
  RunOptions run;
  run.concurrency = 1;
  const Plan plan = Apply({}, run);
  EXPECT_EQ(plan.Summarize().applied, 7U);
  EXPECT_TRUE(errors.empty());
  const auto order = nodes.order();
  EXPECT_LT(IndexOf(order, "worker1:k8s.join"), IndexOf(order, "master1:k8s.ready"));
  EXPECT_LT(IndexOf(order, "worker2:k8s.join"), IndexOf(order, "master1:k8s.ready"));
}

TEST_F(ExecutorTest, NodesWaitingForAnotherNodesItemHoldNoThread) {
  // The master's init waits for every worker's sysctl, so all sixty
  // workers reach k8s.join before it is done. Parked, they wait without a
  // thread each: every change runs on one of the two walkers (a thread per
  // waiting node made 9,300 threads of a 10,000-node apply).
  steps[1] = MakeStep("k8s.init", {Role::kMaster},
                      {SameNode("os.sysctl"), OnRole("os.sysctl", Role::kWorker)});
  for (int i = 3; i <= 60; ++i) {
    inventory.nodes.push_back(MakeNode(fmt::format("worker{}", i), Role::kWorker));
  }
  std::mutex mutex;
  std::set<std::thread::id> changed_on;
  transport.AddHandler([&](const std::string&, const Command& c) -> std::optional<CommandResult> {
    if (c.script.rfind("apt change", 0) == 0 || c.script.rfind("dnf change", 0) == 0) {
      std::lock_guard lock(mutex);
      changed_on.insert(std::this_thread::get_id());
    }
    return std::nullopt;  // the nodes answer as ever
  });
  RunOptions run;
  run.concurrency = 2;
  const Plan plan = Apply({}, run);
  EXPECT_EQ(plan.Summarize().applied, 2U + 2U * 60U);
  EXPECT_TRUE(errors.empty());
  EXPECT_LE(changed_on.size(), 2U) << "threads that ran a change";
}

TEST_F(ExecutorTest, EachChangeIsFollowedByItsVerification) {
  Apply();
  const auto records = transport.RecordsFor("worker2");
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i].command.script.rfind("dnf change", 0) == 0) {
      ASSERT_LT(i + 1, records.size());
      const std::string step =
          records[i].command.script.substr(records[i].command.script.rfind(' '));
      EXPECT_EQ(records[i + 1].command.script, "verify" + step);
    }
  }
}

TEST_F(ExecutorTest, OnlyWhatFollowsAChangeMayWaitForItToSettle) {
  // A verification after a change carries GPUCTL_SETTLE; the probe batch
  // before any change (what plan and check run too) does not.
  Apply();
  int verifications = 0;
  for (const auto& record : transport.RecordsFor("worker1")) {
    const std::string& script = record.command.script;
    const bool settle = record.command.env.count(std::string(kSettleVariable)) != 0;
    if (script.rfind("verify ", 0) == 0) {
      ++verifications;
      EXPECT_TRUE(settle) << script;
    } else if (script.find("probe ") != std::string::npos) {
      EXPECT_FALSE(settle) << script;
      EXPECT_EQ(script.find(kSettleVariable), std::string::npos) << script;
    }
  }
  EXPECT_GT(verifications, 0);
}

// A node that fails before apply (its lock is held by another run) has no
// walker: what waits on it elsewhere is blocked, and the run ends.
class FailNodePhase : public Phase {
 public:
  explicit FailNodePhase(std::string node) : node_(std::move(node)) {}
  [[nodiscard]] std::string Title() const override { return "fail"; }
  void Run(RunContext& context) override { context.FailNode(node_, "locked by another apply"); }

 private:
  std::string node_;
};

TEST_F(ExecutorTest, WaitersOnANodeThatFailedBeforeApplyAreBlocked) {
  Catalog catalog = Catalog::FromSteps(steps);
  Plan plan = Plan::Build(inventory, catalog);
  RunContext context(inventory, catalog, plan, transport, quiet);
  Pipeline pipeline;
  pipeline.Add(MakeConnectPhase())
      .Add(MakeProbePhase())
      .Add(std::make_unique<FailNodePhase>("master1"))
      .Add(MakeApplyPhase({}));
  pipeline.Run(context);
  EXPECT_EQ(plan.Find("worker1", "os.sysctl")->state, ItemState::kApplied);
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->state, ItemState::kBlocked);
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->detail,
            "k8s.init on master1 cannot run: that node failed");
}

TEST_F(ExecutorTest, AFailedChangeStopsThatNodeAndBlocksItsDependents) {
  nodes.FailChange("master1", "k8s.init");
  const Plan plan = Apply();
  EXPECT_EQ(plan.Find("master1", "k8s.init")->state, ItemState::kFailed);
  EXPECT_NE(plan.Find("master1", "k8s.init")
                ->detail.find("change exited 100: E: Unable to locate package"),
            std::string::npos);
  // Workers did what they could, then stopped at the join.
  EXPECT_EQ(plan.Find("worker1", "os.sysctl")->state, ItemState::kApplied);
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->state, ItemState::kBlocked);
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->detail, "k8s.init on master1 did not finish");
  EXPECT_EQ(errors.count("master1"), 1U);
}

TEST_F(ExecutorTest, AFailedVerificationFailsTheStep) {
  nodes.BreakVerify("worker2", "os.sysctl");
  const Plan plan = Apply();
  const PlanItem* item = plan.Find("worker2", "os.sysctl");
  EXPECT_EQ(item->state, ItemState::kFailed);
  EXPECT_EQ(item->detail, "verification failed: still wrong");
  EXPECT_EQ(plan.Find("worker2", "k8s.join")->state, ItemState::kBlocked);
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->state, ItemState::kApplied);
}

// Records node failures so a fake step can wait for one (an event, not a sleep).
class FailureSignal : public Reporter {
 public:
  void NodeFailed(const std::string& /*node*/, const std::string& /*error*/) override {
    std::lock_guard lock(mutex_);
    failed_ = true;
    cv_.notify_all();
  }
  bool WaitForFailure() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return failed_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool failed_ = false;
};

TEST_F(ExecutorTest, FailFastStopsEveryNode) {
  inventory.nodes.push_back(MakeNode("storage1", Role::kStorage));
  steps = {MakeStep("m.fail", {Role::kMaster}), MakeStep("s.first", {Role::kStorage}),
           MakeStep("s.second", {Role::kStorage}, {SameNode("s.first")})};
  nodes.FailChange("master1", "m.fail");
  FailureSignal signal;
  // s.first is in flight when the master fails; fail-fast must let it finish
  // and start nothing after it.
  transport.AddHandler(
      [&](const std::string& node, const Command& c) -> std::optional<CommandResult> {
        if (node == "storage1" && c.script == "apt change s.first") {
          EXPECT_TRUE(signal.WaitForFailure());
        }
        return std::nullopt;
      });
  ApplyOptions options;
  options.fail_fast = true;
  Catalog catalog = Catalog::FromSteps(steps);
  Plan plan = Plan::Build(inventory, catalog);
  RunContext context(inventory, catalog, plan, transport, signal);
  Pipeline pipeline;
  pipeline.Add(MakeConnectPhase()).Add(MakeProbePhase()).Add(MakeApplyPhase(options));
  pipeline.Run(context);
  EXPECT_EQ(plan.Find("master1", "m.fail")->state, ItemState::kFailed);
  EXPECT_EQ(plan.Find("storage1", "s.second")->state, ItemState::kBlocked);
  EXPECT_EQ(plan.Find("storage1", "s.second")->detail, "run stopped before this step");
  const auto order = nodes.order();
  EXPECT_EQ(std::count(order.begin(), order.end(), "storage1:s.second"), 0);
}

TEST_F(ExecutorTest, MaxFailPercentStopsOnceExceeded) {
  nodes.FailChange("master1", "os.sysctl");
  ApplyOptions options;
  options.max_fail_percent = 0;  // any failed node is too many
  const Plan plan = Apply(options);
  EXPECT_EQ(plan.Summarize().failed, 1U);
  EXPECT_EQ(errors.size(), 1U);
}

TEST_F(ExecutorTest, ConsecutiveRebootStepsShareOneReboot) {
  steps = {MakeStep("gpu.nouveau", {Role::kWorker}),
           MakeStep("gpu.driver", {Role::kWorker}, {SameNode("gpu.nouveau")}),
           MakeStep("gpu.persistence", {Role::kWorker}, {SameNode("gpu.driver")})};
  steps[0].reboot = true;
  steps[1].reboot = true;
  const Plan plan = Apply();
  EXPECT_EQ(nodes.reboots("worker1"), 1);
  EXPECT_EQ(nodes.reboots("master1"), 0);
  EXPECT_EQ(plan.Find("worker1", "gpu.nouveau")->state, ItemState::kApplied);
  EXPECT_EQ(plan.Find("worker1", "gpu.driver")->state, ItemState::kApplied);
  EXPECT_EQ(plan.Find("worker1", "gpu.persistence")->state, ItemState::kApplied);
  // The node was reconnected after its reboot: the first try found it not
  // rebooted yet, the second found it back.
  EXPECT_EQ(transport.Connects("worker1"), 3);
}

TEST_F(ExecutorTest, RollingRebootsNeverExceedTheBatch) {
  inventory = MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("w1", Role::kWorker),
                             MakeNode("w2", Role::kWorker), MakeNode("w3", Role::kWorker),
                             MakeNode("w4", Role::kWorker), MakeNode("w5", Role::kWorker)});
  steps = {MakeStep("gpu.driver", {Role::kWorker})};
  steps[0].reboot = true;
  ApplyOptions options;
  options.batch = 2;
  const Plan plan = Apply(options);
  EXPECT_LE(max_reboots, 2U);
  EXPECT_GE(max_reboots, 1U);
  EXPECT_EQ(plan.Summarize().applied, 5U);
  for (const char* w : {"w1", "w2", "w3", "w4", "w5"}) EXPECT_EQ(nodes.reboots(w), 1) << w;
}

// The master's known_hosts step reaches every worker (it scans them); a
// worker's driver step reboots it.
class ReachTest : public ExecutorTest {
 protected:
  void SetUp() override {
    steps = {MakeStep("os.keys", {Role::kWorker}),
             MakeStep("gpu.driver", {Role::kWorker}, {SameNode("os.keys")}),
             MakeStep("gpu.persistence", {Role::kWorker}, {SameNode("gpu.driver")}),
             MakeStep("os.sysctl", {Role::kMaster}),
             MakeStep("os.known-hosts", {Role::kMaster},
                      {SameNode("os.sysctl"), OnRole("os.keys", Role::kWorker)})};
    steps[1].reboot = true;
    nodes.Reaches("os.known-hosts", {"worker1", "worker2"});
  }
  void ApplyWithoutReachingADownNode() {
    const Plan plan = Apply();
    EXPECT_EQ(plan.Summarize().applied, 8U);
    EXPECT_TRUE(errors.empty());
    EXPECT_EQ(nodes.reboots("worker1"), 1);
    const auto violations = nodes.reach_violations();
    EXPECT_TRUE(violations.empty()) << violations.front();
  }
};

TEST_F(ReachTest, AStepWaitsForTheNodesItReachesToComeBack) {
  // The master is ready for its known_hosts step only once worker1 is down.
  nodes.HoldChange("os.sysctl", "down:worker1");
  ApplyWithoutReachingADownNode();
}

TEST_F(ReachTest, ANodeDoesNotRebootUnderAStepThatReachesIt) {
  // worker1 asks for its reboot while the master's step is running.
  nodes.HoldChange("gpu.driver", "started:os.known-hosts");
  ApplyWithoutReachingADownNode();
}

TEST_F(ExecutorTest, KnownAfterApplyIsProbedAgainAndMaySkipTheChange) {
  // The probe cannot tell at plan time; once os.sysctl ran, it says done.
  transport.AddHandler(
      [](const std::string& node, const Command& c) -> std::optional<CommandResult> {
        static std::atomic<int> calls{0};
        if (node != "master1") return std::nullopt;
        CommandResult r;
        if (c.script == "probe k8s.init") {
          r.exit_status = calls++ == 0 ? kProbeUnknown : kProbeSatisfied;
          return r;
        }
        if (c.script == "verify k8s.init" && calls > 1) {
          r.exit_status = 0;  // and its verification agrees, as a real node's would
          return r;
        }
        return std::nullopt;
      });
  const Plan plan = Apply();
  EXPECT_EQ(plan.Find("master1", "k8s.init")->state, ItemState::kSatisfied);
  const auto order = nodes.order();
  EXPECT_EQ(std::count(order.begin(), order.end(), "master1:k8s.init"), 0);
}

TEST_F(ExecutorTest, ASecondApplySendsNoChange) {
  Apply();
  const std::size_t changes_first = nodes.order().size();
  Apply();
  EXPECT_EQ(nodes.order().size(), changes_first);
}

TEST_F(ExecutorTest, InterruptStartsNothingNew) {
  std::atomic<bool> interrupted{true};
  ApplyOptions options;
  options.interrupted = &interrupted;
  const Plan plan = Apply(options);
  EXPECT_TRUE(nodes.order().empty());
  for (const auto& item : plan.items()) {
    EXPECT_EQ(item.state, ItemState::kBlocked);
    EXPECT_EQ(item.detail, "run stopped before this step");
  }
}

// Three workers whose driver step reboots them, one at a time.
class InterruptedRebootTest : public ExecutorTest {
 protected:
  void SetUp() override {
    inventory = MakeInventory({MakeNode("w1", Role::kWorker), MakeNode("w2", Role::kWorker),
                               MakeNode("w3", Role::kWorker)});
    steps = {MakeStep("gpu.driver", {Role::kWorker})};
    steps[0].reboot = true;
    options.batch = 1;
    options.interrupted = &interrupted;
  }
  std::atomic<bool> interrupted{false};
  std::atomic<bool> armed{true};  // Ctrl-C once, in the first run
  ApplyOptions options;
};

TEST_F(InterruptedRebootTest, CtrlCDuringABatchStartsNoOtherRebootAndEndsTheWait) {
  // Ctrl-C lands the moment the first node is told to reboot; until the
  // check after the next one that node says it has not rebooted yet.
  transport.AddHandler(
      [this](const std::string&, const Command& c) -> std::optional<CommandResult> {
        if (c.script.rfind("touch /run/gpuctl-reboot-marker", 0) == 0 && armed.exchange(false)) {
          interrupted = true;
        }
        return std::nullopt;  // StatefulNodes answers
      });
  const Plan plan = Apply(options);
  int rebooted = 0;
  int cancelled = 0;
  for (const char* w : {"w1", "w2", "w3"}) {
    const PlanItem* item = plan.Find(w, "gpu.driver");
    EXPECT_EQ(item->state, ItemState::kBlocked) << w;
    if (nodes.reboots(w) == 1) {
      ++rebooted;
      EXPECT_NE(item->detail.find("rebooting, not yet back"), std::string::npos) << item->detail;
    } else {
      ++cancelled;
      // Changed and its reboot cancelled, or (had Ctrl-C come first) never changed.
      const bool cancelled_reboot = item->detail.find("reboot was cancelled") != std::string::npos;
      EXPECT_TRUE(cancelled_reboot || item->detail == "run stopped before this step")
          << item->detail;
    }
  }
  EXPECT_EQ(rebooted, 1);
  EXPECT_EQ(cancelled, 2);
  EXPECT_EQ(max_reboots, 1U);
  // An interrupted run fails no node: the next apply finishes the work.
  EXPECT_TRUE(errors.empty());
  // Although the cancelled nodes' change is on disk, the reboot they owe is
  // recorded on them: the next apply reboots each of them, once.
  interrupted = false;
  const Plan again = Apply(options);
  for (const char* w : {"w1", "w2", "w3"}) {
    EXPECT_EQ(nodes.reboots(w), 1) << w;
    EXPECT_TRUE(again.Find(w, "gpu.driver")->state == ItemState::kApplied ||
                again.Find(w, "gpu.driver")->state == ItemState::kSatisfied)
        << w << ": " << again.Find(w, "gpu.driver")->detail;
  }
}

TEST_F(InterruptedRebootTest, ANodeThatNeverComesBackFailsNamingTheTimeout) {
  options.batch = 0;
  // Long enough for the others' one "not rebooted yet" answer and retry.
  options.reboot_timeout = std::chrono::seconds(3);
  transport.AddHandler(
      [this](const std::string& node, const Command& c) -> std::optional<CommandResult> {
        if (node == "w2" && c.script.rfind("touch /run/gpuctl-reboot-marker", 0) == 0) {
          transport.Unreachable("w2");  // powered off for good
        }
        return std::nullopt;
      });
  const Plan plan = Apply(options);
  const PlanItem* dead = plan.Find("w2", "gpu.driver");
  EXPECT_EQ(dead->state, ItemState::kFailed);
  EXPECT_NE(dead->detail.find("did not come back from reboot within 3s"), std::string::npos)
      << dead->detail;
  EXPECT_EQ(errors.count("w2"), 1U);
  EXPECT_EQ(plan.Find("w1", "gpu.driver")->state, ItemState::kApplied);
  EXPECT_EQ(plan.Find("w3", "gpu.driver")->state, ItemState::kApplied);
}

TEST(Duration, ReadsAsAnAdminWritesIt) {
  EXPECT_EQ(Duration(std::chrono::seconds(45)), "45s");
  EXPECT_EQ(Duration(std::chrono::seconds(600)), "10m");
  EXPECT_EQ(Duration(std::chrono::seconds(90)), "1m30s");
}

TEST(ParseBatch, CountsAndPercentages) {
  EXPECT_EQ(ParseBatch("", 10), 0U);
  EXPECT_EQ(ParseBatch("3", 10), 3U);
  EXPECT_EQ(ParseBatch("25%", 10), 2U);
  EXPECT_EQ(ParseBatch("25%", 2), 1U);
  EXPECT_THROW(ParseBatch("abc", 10), std::invalid_argument);
  EXPECT_THROW(ParseBatch("0%", 10), std::invalid_argument);
  EXPECT_THROW(ParseBatch("3x", 10), std::invalid_argument);
}

}  // namespace
}  // namespace gpuctl

namespace gpuctl {
namespace {

// The master waits for every node Ready after the workers' joins. A join
// found done does not let it start while containerd under that join is
// still to restart (a lab apply timed out waiting for Ready that way).
TEST(ScheduledItems, ADoneItemPassesOnWhatItStandsOn) {
  const Inventory inventory = testing::MakeInventory({testing::MakeNode("master1", Role::kMaster),
                                                      testing::MakeNode("worker1", Role::kWorker),
                                                      testing::MakeNode("worker2", Role::kWorker)});
  const Catalog catalog = Catalog::FromSteps({
      testing::MakeStep("containers.containerd", {Role::kMaster, Role::kWorker}),
      testing::MakeStep("k8s.join", {Role::kWorker}, {testing::SameNode("containers.containerd")}),
      testing::MakeStep(
          "k8s.nodes-ready", {Role::kMaster},
          {testing::SameNode("containers.containerd"), testing::OnRole("k8s.join", Role::kWorker)}),
  });
  Plan plan = Plan::Build(inventory, catalog);
  for (auto& item : plan.items()) item.state = ItemState::kSatisfied;
  const std::size_t containerd1 = plan.Find("worker1", "containers.containerd")->id;
  const std::size_t join2 = plan.Find("worker2", "k8s.join")->id;
  const std::size_t ready = plan.Find("master1", "k8s.nodes-ready")->id;
  plan.items()[containerd1].state = ItemState::kNeedsChange;
  plan.items()[join2].state = ItemState::kKnownAfterApply;
  plan.items()[ready].state = ItemState::kNeedsChange;

  const std::vector<ScheduledItem> items = ScheduledItems(plan);
  // worker1's join is done: in its place, worker1's containerd. worker2's
  // join is still to run itself. master1's own containerd is done and
  // stands on nothing.
  EXPECT_EQ(items[ready].after, (std::vector<std::size_t>{containerd1, join2}));
  EXPECT_EQ(items[ready].progress, Progress::kWaiting);
  const std::size_t join1 = plan.Find("worker1", "k8s.join")->id;
  EXPECT_EQ(items[join1].progress, Progress::kDone);
  EXPECT_TRUE(items[join1].after.empty());

  // With nothing still to run under them, done items add nothing.
  plan.items()[containerd1].state = ItemState::kSatisfied;
  EXPECT_EQ(ScheduledItems(plan)[ready].after, std::vector<std::size_t>{join2});
}

}  // namespace
}  // namespace gpuctl
