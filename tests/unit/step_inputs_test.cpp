// Values a step reads from another node (`inputs:`) and inventory secrets
// (`secrets:`): fetched over their own connection when a script needs them,
// secret ones only for the change, and never shown, saved or journaled.
#include "gpuctl/run/step_inputs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "cluster_builder.h"
#include "gpuctl/run/executor.h"
#include "gpuctl/run/journal.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/transport/fake_transport.h"
#include "gpuctl/view/plan_view.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using testing::OnRole;

constexpr const char* kJoin =
    "kubeadm join 198.18.0.10:6443 --token abcdef.0123456789abcdef "
    "--discovery-token-ca-cert-hash sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f0";
constexpr const char* kToken = "abcdef.0123456789abcdef";

class StepInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Step init = MakeStep("k8s.init", {Role::kMaster});
    Step join = MakeStep("k8s.join", {Role::kWorker}, {OnRole("k8s.init", Role::kMaster)});
    join.inputs.push_back({"join_command", Role::kMaster, "make-join-command", true, false, {}});
    join.inputs.push_back({"master_ca_hash", Role::kMaster, "read-ca-hash", false, false, {}});
    steps = {init, join};
    // The master answers the input scripts; the worker's join is "done" once
    // its change ran with the right command.
    transport.AddHandler(
        [this](const std::string& node, const Command& c) -> std::optional<CommandResult> {
          // Workers run their scripts on threads of their own, and the fields
          // below are shared between them.
          const std::lock_guard<std::mutex> lock(handler_mutex);
          CommandResult r;
          r.exit_status = 0;
          if (c.script.find("make-join-command") != std::string::npos) {
            r.out = std::string(kJoin) + "\n";
            ++join_commands_made;
          } else if (c.script.find("read-ca-hash") != std::string::npos) {
            r.exit_status = ca_ready ? 0 : 1;
            r.out = ca_ready ? "sha256:0f1e\n" : "";
            r.err = ca_ready ? "" : "cat: /etc/kubernetes/pki/ca.crt: No such file or directory\n";
          } else if (c.script == "apt change k8s.join") {
            change_env = c.env;
            r.out = "[preflight] using token " + std::string(kToken) + "\n";
            joined = true;
          } else if (c.script == "probe k8s.join" || c.script == "verify k8s.join") {
            probe_envs.push_back(c.env);
            r.exit_status = joined ? 0 : 1;
          } else if (c.script == "apt change k8s.init") {
            ca_ready = true;
          } else if (c.script == "probe k8s.init" || c.script == "verify k8s.init") {
            r.exit_status = ca_ready ? 0 : 1;
          } else {
            return std::nullopt;
          }
          (void)node;
          return r;
        });
  }

  Plan Run(bool apply, std::ostream& terminal, const std::filesystem::path& journal_dir) {
    Catalog catalog = Catalog::FromSteps(steps);
    Plan plan = Plan::Build(inventory, catalog);
    Journal journal(journal_dir.string());
    LineReporter lines(terminal, /*verbosity=*/2);
    TeeReporter reporter;
    reporter.Add(&journal);
    reporter.Add(&lines);
    RunContext context(inventory, catalog, plan, transport, reporter);
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase()).Add(MakeProbePhase());
    if (apply) {
      pipeline.Add(MakeApplyPhase({}));
    }
    pipeline.Run(context);
    saved_plan = PlanToJson(plan, {}, context.NodeErrors()).dump();
    return plan;
  }

  static std::string ReadAll(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  Inventory inventory =
      MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker)});
  std::vector<Step> steps;
  FakeTransport transport;
  bool ca_ready = false;
  bool joined = false;
  int join_commands_made = 0;
  std::atomic<int> hardware_reads{0};
  std::atomic<bool> driver_installed{false};
  std::mutex handler_mutex;
  std::map<std::string, std::string> change_env;
  std::vector<std::map<std::string, std::string>> probe_envs;
  std::string saved_plan;
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuctl-inputs-" + std::to_string(getpid()));
};

TEST_F(StepInputsTest, PlanNeverMakesASecretAndWaitsForAnInputNotReadyYet) {
  std::ostringstream terminal;
  const Plan plan = Run(/*apply=*/false, terminal, dir / "plan");
  EXPECT_EQ(join_commands_made, 0);
  const PlanItem* join = plan.Find("worker1", "k8s.join");
  EXPECT_EQ(join->state, ItemState::kKnownAfterApply);
  EXPECT_NE(join->observed.find("input 'master_ca_hash' from master1 is not available yet"),
            std::string::npos)
      << join->observed;
  EXPECT_NE(join->observed.find("No such file or directory"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_F(StepInputsTest, TheChangeGetsAFreshSecretThatNothingShowsOrKeeps) {
  std::ostringstream terminal;
  const Plan plan = Run(/*apply=*/true, terminal, dir / "apply");
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->state, ItemState::kApplied);
  EXPECT_EQ(join_commands_made, 1);
  EXPECT_EQ(change_env["GPUCTL_JOIN_COMMAND"], kJoin);
  // Read after the master's init ran, not the plan-time failure.
  EXPECT_EQ(change_env["GPUCTL_MASTER_CA_HASH"], "sha256:0f1e");
  // A probe or verification never receives the secret.
  ASSERT_FALSE(probe_envs.empty());
  for (const auto& env : probe_envs) EXPECT_EQ(env.count("GPUCTL_JOIN_COMMAND"), 0U);
  // Inputs come over their own connection to the master, not its walker's.
  EXPECT_EQ(transport.Connects("master1"), 2);

  const std::string journal = ReadAll(dir / "apply" / "journal.jsonl");
  EXPECT_FALSE(journal.empty());
  for (const std::string* text : {&journal, static_cast<const std::string*>(&saved_plan)}) {
    EXPECT_EQ(text->find(kToken), std::string::npos) << *text;
  }
  EXPECT_EQ(terminal.str().find(kToken), std::string::npos) << terminal.str();
  EXPECT_NE(terminal.str().find("<redacted>"), std::string::npos) << terminal.str();
  std::filesystem::remove_all(dir);
}

TEST_F(StepInputsTest, AnInventorySecretReachesEveryScriptRedacted) {
  const std::string key = "bXVuZ2Uta2V5LW5vdC1yZWFsbHktcmFuZG9t";
  setenv("GPUCTL_TEST_MUNGE_KEY", key.c_str(), 1);
  inventory.slurm.emplace();
  inventory.slurm->munge_key_env = "GPUCTL_TEST_MUNGE_KEY";
  steps[1].secrets = {"munge_key"};
  std::ostringstream terminal;
  Run(/*apply=*/true, terminal, dir / "secret");
  EXPECT_EQ(change_env["GPUCTL_MUNGE_KEY"], key);
  ASSERT_FALSE(probe_envs.empty());
  EXPECT_EQ(probe_envs.front()["GPUCTL_MUNGE_KEY"], key);
  EXPECT_EQ(saved_plan.find(key), std::string::npos);
  EXPECT_EQ(ReadAll(dir / "secret" / "journal.jsonl").find(key), std::string::npos);
  unsetenv("GPUCTL_TEST_MUNGE_KEY");
  std::filesystem::remove_all(dir);
}

TEST_F(StepInputsTest, AnInputFromEachNodeOfARoleNamesEveryNodesLines) {
  inventory = MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                             MakeNode("worker2", Role::kWorker)});
  // k8s.join on the workers reads every worker's hardware; worker2 has two
  // lines, and none comes from the master.
  steps[1].inputs = {{"node_hardware", Role::kWorker, "read-hardware", false, true, {}}};
  transport.AddHandler(
      [](const std::string& node, const Command& c) -> std::optional<CommandResult> {
        if (c.script.find("read-hardware") == std::string::npos) return std::nullopt;
        CommandResult r;
        r.exit_status = node == "master1" ? 99 : 0;
        r.out = node == "worker1" ? "CPUs=64\n" : "CPUs=32\nRealMemory=512000\n";
        return r;
      });
  std::ostringstream terminal;
  const Plan plan = Run(/*apply=*/true, terminal, dir / "each");
  EXPECT_EQ(plan.Find("worker2", "k8s.join")->state, ItemState::kApplied);
  EXPECT_EQ(change_env["GPUCTL_NODE_HARDWARE"],
            "worker1 CPUs=64\nworker2 CPUs=32\nworker2 RealMemory=512000");
  std::filesystem::remove_all(dir);
}

TEST_F(StepInputsTest, AnInputIsReadAgainAfterItsSourceRebootedOverANewSession) {
  inventory = MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                             MakeNode("storage1", Role::kStorage)});
  // storage1 reboots for a step of its own before worker1 joins; the join
  // reads storage1's hardware, which the plan read over a session the
  // reboot killed.
  Step reboots = MakeStep("gpu.driver", {Role::kStorage});
  reboots.reboot = true;
  steps.push_back(reboots);
  steps[1].depends.push_back(OnRole("gpu.driver", Role::kStorage));
  steps[1].inputs = {{"node_hardware", Role::kStorage, "read-hardware", false, true, {}}};
  transport.AddHandler(
      [this](const std::string& node, const Command& c) -> std::optional<CommandResult> {
        CommandResult r;
        r.exit_status = 0;
        if (c.script.find("read-hardware") != std::string::npos) {
          ++hardware_reads;
          r.out = "CPUs=8\n";
        } else if (c.script.rfind("touch /run/gpuctl-reboot-marker", 0) == 0) {
          transport.Restart(node);
        } else if (c.script == "probe gpu.driver") {
          r.exit_status = driver_installed ? 0 : 1;
        } else if (c.script == "apt change gpu.driver") {
          driver_installed = true;
        } else {
          return std::nullopt;
        }
        return r;
      });
  std::ostringstream terminal;
  const Plan plan = Run(/*apply=*/true, terminal, dir / "restart");
  EXPECT_EQ(plan.Find("storage1", "gpu.driver")->state, ItemState::kApplied) << terminal.str();
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->state, ItemState::kApplied) << terminal.str();
  EXPECT_EQ(change_env["GPUCTL_NODE_HARDWARE"], "storage1 CPUs=8");
  // Read for the plan, then once more after the reboot (not per script).
  EXPECT_EQ(hardware_reads, 2);
  // The run's connection, the inputs' one, the run's after the reboot, and
  // the inputs' again.
  EXPECT_EQ(transport.Connects("storage1"), 4);
  std::filesystem::remove_all(dir);
}

TEST_F(StepInputsTest, ASecretReadAgainMakesItsSourcesKeptValuesStale) {
  // The CA hash names how many join commands the master made: a secret's
  // script may change its node, as the master's munge key is made on first
  // need. The change must see the value after its own secret was made.
  transport.AddHandler(
      [this](const std::string&, const Command& c) -> std::optional<CommandResult> {
        const std::lock_guard<std::mutex> lock(handler_mutex);
        if (c.script.find("read-ca-hash") == std::string::npos || !ca_ready) return std::nullopt;
        CommandResult r;
        r.exit_status = 0;
        r.out = "sha256:" + std::to_string(join_commands_made) + "\n";
        return r;
      });
  std::ostringstream terminal;
  const Plan plan = Run(/*apply=*/true, terminal, dir / "stale");
  EXPECT_EQ(plan.Find("worker1", "k8s.join")->state, ItemState::kApplied) << terminal.str();
  EXPECT_EQ(change_env["GPUCTL_MASTER_CA_HASH"], "sha256:1");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuctl
