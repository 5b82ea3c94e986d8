// A secret that a node echoes back (a join token in kubeadm's output, say)
// must not reach the plan, the journal or the terminal lines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cluster_builder.h"
#include "gpuctl/run/executor.h"
#include "gpuctl/run/journal.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/run/script_runner.h"
#include "gpuctl/transport/fake_transport.h"
#include "gpuctl/view/plan_view.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;

TEST(RedactionFlow, SecretsNeverReachPlanJournalOrTerminal) {
  const std::string secret = "abcdef.0123456789abcdef";
  Inventory inventory = MakeInventory({MakeNode("master1", Role::kMaster)});
  Catalog catalog = Catalog::FromSteps({MakeStep("k8s.token", {Role::kMaster})});
  FakeTransport transport;
  // The probe reports the token; the change prints it and then fails with it.
  transport.When("*", "probe k8s.token", kProbeNeedsChange, "token " + secret + " expired\n");
  transport.AddHandler([&](const std::string&, const Command& c) -> std::optional<CommandResult> {
    if (c.script != "apt change k8s.token") return std::nullopt;
    CommandResult r;
    r.exit_status = 1;
    r.out = "kubeadm join 198.18.0.10:6443 --token " + secret + "\n";
    r.err = "error: token " + secret + " refused\n";
    return r;
  });

  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuctl-redact-" + std::to_string(getpid()));
  std::ostringstream terminal;
  {
    Journal journal(dir.string());
    LineReporter lines(terminal, /*verbosity=*/1);
    TeeReporter reporter;
    reporter.Add(&journal);
    reporter.Add(&lines);
    Plan plan = Plan::Build(inventory, catalog);
    RunContext context(inventory, catalog, plan, transport, reporter);
    context.redactor.Add(secret);
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase()).Add(MakeProbePhase()).Add(MakeApplyPhase({}));
    pipeline.Run(context);
    EXPECT_EQ(plan.Find("master1", "k8s.token")->state, ItemState::kFailed);

    const std::string saved = PlanToJson(plan, {}, context.NodeErrors()).dump();
    EXPECT_EQ(saved.find(secret), std::string::npos) << saved;
    EXPECT_NE(saved.find("<redacted>"), std::string::npos) << saved;
    for (const auto& [node, error] : context.NodeErrors()) {
      EXPECT_EQ(error.find(secret), std::string::npos) << error;
    }
  }
  std::ifstream in(dir / "journal.jsonl");
  std::stringstream journal_text;
  journal_text << in.rdbuf();
  EXPECT_FALSE(journal_text.str().empty());
  EXPECT_EQ(journal_text.str().find(secret), std::string::npos) << journal_text.str();
  EXPECT_EQ(terminal.str().find(secret), std::string::npos) << terminal.str();
  EXPECT_NE(terminal.str().find("<redacted>"), std::string::npos) << terminal.str();
  std::filesystem::remove_all(dir);
}

// A script reaches only the reporters that show it (-v), redacted; the
// others are given "", so a large apply copies no script for them.
TEST(RedactionFlow, ScriptsReachOnlyReportersThatShowThem) {
  struct Recorder : Reporter {
    bool shows = false;
    std::vector<std::string> scripts;
    [[nodiscard]] bool ShowsScripts() const override { return shows; }
    void CommandStarted(const std::string& /*node*/, const std::string& /*step*/,
                        Activity /*activity*/, const std::string& script) override {
      scripts.push_back(script);
    }
  };
  const std::string secret = "s3cret-join-token";
  FakeTransport transport;
  Endpoint endpoint;
  endpoint.node = "worker1";
  auto connection = transport.Connect(endpoint);
  Redactor redactor;
  redactor.Add(secret);
  const std::string no_prelude;  // the runner keeps a reference to it
  for (const bool shows : {false, true}) {
    Recorder recorder;
    recorder.shows = shows;
    TeeReporter tee;
    Reporter quiet;
    tee.Add(&quiet);
    tee.Add(&recorder);
    EXPECT_EQ(tee.ShowsScripts(), shows);
    ScriptRunner runner(*connection, tee, redactor, no_prelude);
    runner.RunStep("worker1", "k8s.join", Activity::kChange, "kubeadm join --token " + secret, {});
    ASSERT_EQ(recorder.scripts.size(), 1U);
    EXPECT_EQ(recorder.scripts[0], shows ? "kubeadm join --token <redacted>" : "");
  }
  std::ostringstream quiet_terminal;
  std::ostringstream verbose_terminal;
  EXPECT_FALSE(LineReporter(quiet_terminal, 0).ShowsScripts());
  EXPECT_TRUE(LineReporter(verbose_terminal, 1).ShowsScripts());
}

}  // namespace
}  // namespace gpuctl
