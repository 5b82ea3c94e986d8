// ApplyAction over the fake transport: the refusals a saved plan can meet,
// the node locks, and a run that follows an interrupted one — what the CLI
// used to be the only way to reach.
#include "gpuctl/action/apply_action.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>

#include "cluster_builder.h"
#include "converging_nodes.h"
#include "gpuctl/action/read_only.h"
#include "gpuctl/model/os_release.h"
#include "gpuctl/run/run_history.h"
#include "gpuctl/transport/fake_transport.h"
#include "gpuctl/view/plan_view.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using testing::OnRole;
using testing::SameNode;

// Notes and node failures, as the CLI's progress lines would show them.
class Said : public Reporter {
 public:
  void Note(const std::string& node, const std::string& message) override {
    std::lock_guard lock(mutex_);
    lines_.push_back(node + ": " + message);
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

class ApplyActionTest : public ::testing::Test {
 protected:
  ApplyActionTest() {
    spec.inventory =
        MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                       MakeNode("worker2", Role::kWorker, OsFamily::kRhel)});
    spec.catalog =
        Catalog::FromSteps({MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}),
                            MakeStep("k8s.join", {Role::kWorker},
                                     {SameNode("os.sysctl"), OnRole("os.sysctl", Role::kMaster)})});
    spec.inventory.path = "/srv/cluster/inventory.yaml";
    spec.inventory_digest = "digest-of-the-inventory";
    // Each node is what the inventory says, and keeps what its changes did.
    fake_nodes.os = [](const std::string& node) {
      return std::string(node == "worker2" ? "rocky-9" : "ubuntu-22.04");
    };
    fake_nodes.Attach(transport);
    char dir[] = "/tmp/gpuctl-apply-action.XXXXXX";
    runs = mkdtemp(dir);
  }
  ~ApplyActionTest() override { fs::remove_all(runs); }

  ApplySettings Settings(const std::string& run) const {
    ApplySettings settings;
    settings.run_dir = (runs / run).string();
    settings.holder = "user=test host=here pid=1 started=2026-11-24T00:00:00Z";
    return settings;
  }

  // `gpuctl plan --out`, read back as apply reads it.
  ApplyTarget SavedPlanNow() {
    Reporter quiet;
    const ReadOnlyResult planned = PlanAction(spec, transport, quiet, {});
    const nlohmann::json saved = PlanToJson(planned.plan, HeaderFor(spec), planned.node_errors);
    ApplyTarget target;
    target.path = (runs / "p.json").string();
    target.inventory_path = "inventory.yaml";
    target.saved = PlanFromJson(saved, target.path);
    return target;
  }

  std::size_t ChangesSent() const {
    std::size_t n = 0;
    for (const auto& r : transport.Records()) {
      const std::string& s = r.command.script;
      n += s.rfind("apt change", 0) == 0 || s.rfind("dnf change", 0) == 0 ? 1U : 0U;
    }
    return n;
  }

  Spec spec;
  FakeTransport transport;
  testing::ConvergingNodes fake_nodes;
  fs::path runs;
  ApplyTarget inventory_target{"inventory.yaml", "inventory.yaml", std::nullopt};
};

TEST_F(ApplyActionTest, AppliesAfterPrepareAndReleasesItsLocksWhenFinished) {
  Reporter quiet;
  {
    ApplyAction action(spec, inventory_target, transport, quiet, Settings("run1"));
    const auto& prepared = action.Prepare();
    EXPECT_TRUE(prepared.drift.empty());
    EXPECT_TRUE(prepared.has_changes);
    EXPECT_EQ(ChangesSent(), 0U) << "Prepare changes nothing";
    action.Apply();
    action.Finish();
    EXPECT_EQ(action.plan().Summarize().applied, 5U);
    EXPECT_TRUE(action.NodeErrors().empty());
  }
  EXPECT_EQ(ChangesSent(), 5U);
  EXPECT_TRUE(fs::exists(runs / "run1/plan.json"));
  EXPECT_TRUE(fs::exists(runs / "run1/journal.jsonl"));
  for (const char* node : {"master1", "worker1", "worker2"}) {
    const auto records = transport.RecordsFor(node);
    ASSERT_FALSE(records.empty());
    EXPECT_NE(records.back().command.script.find("rm -rf \"$d/lock\""), std::string::npos)
        << node << ": the last command releases the lock";
  }
}

// `gpuctl runs` reads a run from its journal's first and last lines.
TEST_F(ApplyActionTest, TheJournalOpensWithTheRunAndEndsWithHowItEnded) {
  Reporter quiet;
  const std::string id = "20261124T000000Z-1";
  ApplySettings settings = Settings("state/lab/runs/" + id);
  {
    ApplyAction action(spec, inventory_target, transport, quiet, settings);
    action.Prepare();
    action.Apply();
    action.Finish();
    EXPECT_EQ(action.Outcome(), "applied");
  }
  {
    ApplyAction again(spec, inventory_target, transport, quiet,
                      Settings("state/lab/runs/20261124T000001Z-1"));
    again.Prepare();
    again.Finish();
    EXPECT_EQ(again.Outcome(), "nothing to change");
  }
  const auto listed = ListRuns((runs / "state").string(), "");
  ASSERT_EQ(listed.size(), 2U);
  const RunRecord& first = listed.front();
  EXPECT_EQ(first.id, id);
  EXPECT_EQ(first.cluster, "lab");
  EXPECT_TRUE(first.finished);
  EXPECT_EQ(first.outcome, "applied");
  EXPECT_EQ(first.inventory, "inventory.yaml");
  EXPECT_NE(first.command, "") << "the command line is recorded";
  EXPECT_EQ(first.nodes, 3U);
  EXPECT_EQ(first.changed, 5U);
  EXPECT_EQ(first.failed, 0U);
  EXPECT_EQ(listed.back().outcome, "nothing to change");
  EXPECT_EQ(listed.back().changed, 0U);
}

TEST_F(ApplyActionTest, ASavedPlanOfAnotherInventoryIsRefusedBeforeAnyNodeIsContacted) {
  ApplyTarget target = SavedPlanNow();
  const std::size_t sent = transport.Records().size();
  target.saved->header.inventory_digest = "digest-of-an-older-inventory";
  EXPECT_EQ(SavedPlanRefusal(target, spec),
            "refusing " + target.path +
                ": inventory.yaml changed since the plan was saved; run plan again");
  target.saved->header.inventory_digest = spec.inventory_digest;
  target.saved->header.catalog_digest = "another-catalog";
  EXPECT_NE(SavedPlanRefusal(target, spec).find("the step catalog changed"), std::string::npos);
  EXPECT_EQ(transport.Records().size(), sent);
}

TEST_F(ApplyActionTest, APreflightRefusalOnOneNodeStopsTheWholeRunBeforeAnyChange) {
  // worker2's repositories lack what k8s.join would install: its probe says
  // so (exit 5); the other nodes could converge, but none is touched.
  transport.When("worker2", "probe k8s.join", kProbeRefused,
                 "repository kubernetes offers no kubeadm 1.99 (it has 1.30.4-1.1); set "
                 "versions.kubernetes to a release it has\n");
  Reporter quiet;
  ApplyAction action(spec, inventory_target, transport, quiet, Settings("run1"));
  const auto& prepared = action.Prepare();
  EXPECT_TRUE(prepared.has_changes);
  EXPECT_EQ(prepared.refused, 1U);
  const PlanItem* refused = action.plan().Find("worker2", "k8s.join");
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->state, ItemState::kRefused);
  EXPECT_THROW(action.Apply(), std::logic_error);
  action.Finish();
  EXPECT_EQ(action.Outcome(), "refused (preflight)");
  EXPECT_EQ(ChangesSent(), 0U);
  const std::string text = RenderPlanText(action.plan(), spec.inventory, {}, {});
  EXPECT_NE(text.find("x k8s.join                       refused: repository kubernetes offers no "
                      "kubeadm 1.99"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", 1 refused"), std::string::npos) << text;
  EXPECT_NE(text.find("1 change cannot succeed as the inventory asks (marked x above): apply "
                      "refuses to start"),
            std::string::npos)
      << text;
}

TEST_F(ApplyActionTest, ASavedPlanIsRefusedWhenANodeMovedNamingNodeAndStep) {
  const ApplyTarget target = SavedPlanNow();
  EXPECT_EQ(SavedPlanRefusal(target, spec), "");
  fake_nodes.MarkDone("worker1", "os.sysctl");  // someone fixed it by hand since
  Reporter quiet;
  ApplyAction action(spec, target, transport, quiet, Settings("run1"));
  const auto& prepared = action.Prepare();
  ASSERT_EQ(prepared.drift.size(), 1U);
  EXPECT_NE(prepared.drift[0].find("worker1"), std::string::npos) << prepared.drift[0];
  EXPECT_NE(prepared.drift[0].find("os.sysctl"), std::string::npos) << prepared.drift[0];
  EXPECT_THROW(action.Apply(), std::logic_error);
  EXPECT_EQ(ChangesSent(), 0U);
}

TEST_F(ApplyActionTest, ASavedPlanNothingMovedSinceIsAppliedAsSaved) {
  const ApplyTarget target = SavedPlanNow();
  Reporter quiet;
  ApplyAction action(spec, target, transport, quiet, Settings("run1"));
  ASSERT_TRUE(action.Prepare().drift.empty());
  action.Apply();
  EXPECT_EQ(action.plan().Summarize().applied, 5U);
}

TEST_F(ApplyActionTest, ANodeLockedByAnotherRunIsLeftOutNamingTheHolder) {
  transport.When("worker1", "mv -T \"$t\" \"$d/lock\"", 1,
                 "run=20261124T010000Z-77\nuser=alice host=console2 pid=77 "
                 "started=2026-11-24T01:00:00Z\n");
  Reporter quiet;
  ApplyAction action(spec, inventory_target, transport, quiet, Settings("run1"));
  action.Prepare();
  action.Apply();
  action.Finish();
  const auto errors = action.NodeErrors();
  ASSERT_EQ(errors.count("worker1"), 1U);
  EXPECT_NE(errors.at("worker1").find("locked by another apply (run=20261124T010000Z-77"),
            std::string::npos)
      << errors.at("worker1");
  EXPECT_NE(errors.at("worker1").find("--break-lock"), std::string::npos);
  EXPECT_FALSE(fake_nodes.IsDone("worker1", "os.sysctl")) << "nothing changes on a locked node";
  EXPECT_TRUE(fake_nodes.IsDone("worker2", "k8s.join")) << "the other nodes go on";
}

TEST_F(ApplyActionTest, NodesHeldByOneOtherRunAreSaidOnceNamingThatRunAndTheNodes) {
  const std::string holder =
      "run=20261124T010000Z-77\nuser=alice host=console2 pid=77 started=2026-11-24T01:00:00Z\n";
  transport.When("worker1", "mv -T \"$t\" \"$d/lock\"", 1, holder);
  transport.When("worker2", "mv -T \"$t\" \"$d/lock\"", 1, holder);
  class Failures : public Reporter {
   public:
    void NodeFailed(const std::string& node, const std::string& error) override {
      std::lock_guard lock(mutex_);
      said.push_back(node + ": " + error);
    }
    std::mutex mutex_;
    std::vector<std::string> said;
  } failures;
  ApplyAction action(spec, inventory_target, transport, failures, Settings("run1"));
  action.Prepare();
  action.Apply();
  action.Finish();
  ASSERT_EQ(failures.said.size(), 1U) << "one line for one holder";
  EXPECT_NE(failures.said[0].find("worker1: locked by another apply (run=20261124T010000Z-77 "
                                  "user=alice host=console2"),
            std::string::npos)
      << failures.said[0];
  EXPECT_NE(failures.said[0].find("that run holds 2 nodes: worker1, worker2"), std::string::npos)
      << failures.said[0];
  const auto errors = action.NodeErrors();
  EXPECT_EQ(errors.count("worker1"), 1U);
  EXPECT_EQ(errors.count("worker2"), 1U) << "each node still fails with the holder";
  EXPECT_EQ(action.Outcome(), "incomplete");
}

TEST_F(ApplyActionTest, ARunAfterAnInterruptedOneNamesTheStepThatOneStoppedIn) {
  {
    Journal previous((runs / "20261124T010000Z-1").string());
    previous.CommandStarted("worker1", "os.sysctl", Activity::kChange, "apt change os.sysctl");
  }
  Said said;
  ApplyAction action(spec, inventory_target, transport, said, Settings("20261124T020000Z-2"));
  action.Prepare();
  const auto lines = said.lines();
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0],
            "worker1: the previous run stopped during os.sysctl; its probe decides now whether "
            "it still needs to run");
  // ... and the probe decided: it still needs to run.
  EXPECT_EQ(action.plan().Find("worker1", "os.sysctl")->state, ItemState::kNeedsChange);
}

}  // namespace
}  // namespace gpuctl
