// One verdict per step: plan (probe phase) and check (check phase) run the
// same script, so a step check reports as wrong is never "ok" in a plan.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "cluster_builder.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/run/prober.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;

struct ShellRun {
  int status = -1;
  std::string out;
};

// Runs a script with this machine's sh, as a node's shell would.
ShellRun RunSh(const std::string& script) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpuctl-verdict-" + std::to_string(::getpid()) + ".sh");
  {
    FILE* file = std::fopen(path.c_str(), "w");
    std::fputs(script.c_str(), file);
    std::fclose(file);
  }
  ShellRun run;
  FILE* pipe = popen(("sh " + path.string()).c_str(), "r");
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    run.out += buffer;
  }
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::filesystem::remove(path);
  return run;
}

Step StepWith(const std::string& probe, const std::string& verify) {
  Step step = MakeStep("gpu.driver", {Role::kWorker});
  step.probe = probe;
  step.verify = verify;
  return step;
}

TEST(VerdictScript, APassingProbeWithAFailingVerificationNeedsAttention) {
  const ShellRun run =
      RunSh(VerdictScript(StepWith("exit 0", "echo '7 of 8 GPUs visible'\nexit 1")));
  EXPECT_EQ(run.status, kProbeAttention);
  EXPECT_NE(run.out.find("7 of 8 GPUs visible"), std::string::npos) << run.out;
}

TEST(VerdictScript, AFailingProbeDecidesAndTheVerificationDoesNotRun) {
  const auto marker = std::filesystem::temp_directory_path() / "gpuctl-verdict-verify-ran";
  std::filesystem::remove(marker);
  const ShellRun run = RunSh(VerdictScript(
      StepWith("echo 'nvidia-driver-550 is not installed'\nexit 1", "touch " + marker.string())));
  EXPECT_EQ(run.status, kProbeNeedsChange);
  EXPECT_FALSE(std::filesystem::exists(marker));
  const ShellRun unknown = RunSh(VerdictScript(StepWith("exit 3", "exit 1")));
  EXPECT_EQ(unknown.status, kProbeUnknown);
}

TEST(VerdictScript, BothPassingIsSatisfied) {
  EXPECT_EQ(RunSh(VerdictScript(StepWith("true", "true"))).status, kProbeSatisfied);
  // A verification's `exit 0` ends only its own part.
  EXPECT_EQ(RunSh(VerdictScript(StepWith("exit 0", "exit 0"))).status, kProbeSatisfied);
}

TEST(VerdictScript, AStepWithoutItsOwnVerificationRunsItsProbe) {
  EXPECT_EQ(VerdictScript(StepWith("probe it", "")), "probe it");
}

TEST(VerdictScript, SplitsBackIntoItsPartsWithThePreludeOnBoth) {
  const Step step = StepWith("probe gpu.driver", "verify gpu.driver");
  std::string probe;
  std::string verify;
  ASSERT_TRUE(ParseVerdictScript(WithPrelude("pkg_installed() { :; }", VerdictScript(step)), probe,
                                 verify));
  EXPECT_EQ(probe, "pkg_installed() { :; }\n# --- step ---\nprobe gpu.driver");
  EXPECT_EQ(verify, "pkg_installed() { :; }\n# --- step ---\nverify gpu.driver");
  EXPECT_FALSE(ParseVerdictScript("probe gpu.driver", probe, verify));
}

class OneVerdictTest : public ::testing::Test {
 protected:
  Inventory inventory = MakeInventory({MakeNode("worker1", Role::kWorker)});
  Catalog catalog = Catalog::FromSteps({MakeStep("gpu.driver", {Role::kWorker})});
  FakeTransport transport;
  Reporter quiet;

  PlanItem Run(std::unique_ptr<Phase> phase) {
    Plan plan = Plan::Build(inventory, catalog);
    RunContext context(inventory, catalog, plan, transport, quiet, {});
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase()).Add(std::move(phase));
    pipeline.Run(context);
    return *plan.Find("worker1", "gpu.driver");
  }
};

TEST_F(OneVerdictTest, PlanAndCheckAgreeOnAGpuThatIsGone) {
  // The driver is installed and loaded (the probe passes), but a GPU fell
  // off the bus: installing the driver again would not bring it back.
  transport.When("worker1", "probe gpu.driver", kProbeSatisfied, "driver 550.54.14 loaded\n");
  transport.When("worker1", "verify gpu.driver", 1, "7 of 8 GPUs visible\n");
  const PlanItem planned = Run(MakeProbePhase());
  const PlanItem checked = Run(MakeCheckPhase());
  EXPECT_EQ(planned.state, ItemState::kNeedsAttention);
  EXPECT_EQ(checked.state, ItemState::kNeedsAttention);
  EXPECT_EQ(planned.observed, "7 of 8 GPUs visible");
  EXPECT_EQ(checked.observed, planned.observed);
}

TEST_F(OneVerdictTest, APassingStepShowsWhatItsProbeSaw) {
  transport.When("worker1", "probe gpu.driver", kProbeSatisfied, "driver 550.54.14 loaded\n");
  const PlanItem planned = Run(MakeProbePhase());
  EXPECT_EQ(planned.state, ItemState::kSatisfied);
  EXPECT_EQ(planned.observed, "driver 550.54.14 loaded");
}

}  // namespace
}  // namespace gpuctl
