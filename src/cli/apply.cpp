// gpuctl apply: compute the plan exactly as `plan` does, show it, confirm,
// then make it true; or apply a saved plan if nothing moved since.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "gpuctl/action/apply_action.h"
#include "gpuctl/action/reset.h"
#include "gpuctl/util/terminal.h"
#include "gpuctl/view/apply_view.h"
#include "gpuctl/view/plan_view.h"

namespace gpuctl::cli {
namespace {

struct ApplyCliOptions {
  std::string target;  // inventory YAML or saved plan JSON
  ConnectOptions connect;
  bool yes = false;
  bool fail_fast = false;
  int max_fail_percent = 100;
  std::string batch;
  int reboot_timeout_s = 600;  // ApplyOptions says why
  int drain_timeout_s = 600;
  bool no_drain = false;
  bool break_lock = false;
  std::string run_dir;
  bool show_ok = false;  // what is already true is not listed unless asked
  // `gpuctl reset`: the same run, on the nodes --limit/--exclude choose
  // (action/reset.h), and with --packages what gpuctl installed goes too.
  bool reset = false;
  bool packages = false;
};

bool Confirm(std::ostream& out) {
  if (isatty(STDIN_FILENO) == 0) {
    std::cerr << CannotConfirmMessage();
    return false;
  }
  out << ConfirmPrompt() << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "yes";
}

int RunApply(const ApplyCliOptions& options, const GlobalOptions& global) {
  const auto target = ReadApplyTarget(options.target, std::cerr);
  if (!target) {
    return kExitError;
  }
  SpecOptions spec_options = SpecOptionsFrom(global);
  if (options.reset) {
    // Reset chooses its nodes itself: the others are not limited, they
    // forget the ones that go.
    spec_options.limit.clear();
    spec_options.exclude.clear();
    if (target->saved) {
      std::cerr << "gpuctl: reset takes the inventory, not a saved plan; nothing was sent to "
                   "any node\n";
      return kExitError;
    }
  }
  auto spec = LoadSpec(target->inventory_path, spec_options, std::cerr);
  if (!spec) {
    return kExitError;
  }
  if (options.reset) {
    if (const std::string refusal =
            PrepareReset(*spec, global.limit, global.exclude, options.packages);
        !refusal.empty()) {
      std::cerr << "gpuctl: reset: " << refusal << "; nothing was sent to any node\n";
      return kExitError;
    }
  }
  if (const std::string refusal = SavedPlanRefusal(*target, *spec); !refusal.empty()) {
    std::cerr << "gpuctl: " << refusal << '\n';
    return kExitError;
  }
  ApplySettings settings;
  settings.run = options.connect.Run();
  settings.run_dir = options.run_dir;
  settings.break_lock = options.break_lock;
  settings.executor.fail_fast = options.fail_fast;
  settings.executor.max_fail_percent = options.max_fail_percent;
  settings.executor.reboot_timeout = std::chrono::seconds(options.reboot_timeout_s);
  // A reset of every node takes the cluster itself: nothing to drain onto.
  settings.executor.drain = !options.no_drain && !ResetsWholeCluster(*spec);
  settings.executor.drain_timeout = std::chrono::seconds(options.drain_timeout_s);
  try {
    settings.executor.batch = ParseBatch(options.batch, spec->inventory.nodes.size());
    // A running cluster loses one node at a time unless --batch says more.
    settings.executor.members_out = settings.executor.batch == 0 ? 1 : settings.executor.batch;
  } catch (const std::exception& e) {
    std::cerr << "gpuctl: --batch: " << e.what() << '\n';
    return kExitError;
  }
  const std::atomic<bool>& interrupted = InstallInterruptHandler();
  settings.executor.interrupted = &interrupted;

  auto transport = NodeTransport();
  auto board = MakeProgress(global, *spec, options.show_ok);
  NodeTimer timer;  // how long each node worked, for the recap
  TeeReporter progress;
  progress.Add(board.get());
  progress.Add(&timer);
  ApplyAction action(*spec, *target, *transport, progress, settings);
  // With -o json, stdout carries one document at the end (docs/json.md);
  // what a person reads goes to stderr.
  const bool json = global.output == "json";
  std::ostream& out = json ? std::cerr : std::cout;
  const int out_fd = json ? STDERR_FILENO : STDOUT_FILENO;
  TextOptions text;
  text.color = !global.no_color && isatty(out_fd) != 0;
  text.show_ok = options.show_ok;
  text.width = TerminalWidth(out_fd);
  const auto started = std::chrono::steady_clock::now();

  bool refused = false;
  const ApplyAction::Prepared& prepared = action.Prepare();
  board->Hide();  // the plan and the question go below, not under a board
  if (!prepared.drift.empty()) {
    std::cerr << SavedPlanMovedMessage(prepared.drift);
    refused = true;
  } else {
    WritePlanText(out, action.plan(), spec->inventory, action.NodeErrors(), text);
    if (prepared.refused > 0) {
      refused = true;  // the plan's RefusalNotice said why and what to do
    } else if (!prepared.has_changes) {
      out << (options.reset && action.NodeErrors().empty()
                  ? "\nNothing to reset: what gpuctl set up on these nodes is already undone.\n"
                  : NothingToApplyMessage(action.NodeErrors().size()));
    } else {
      out << LeftOutNotice(action.NodeErrors().size());
      out << RebootNotice(action.plan().Summarize().rebooting_nodes, settings.executor.batch);
      if (!options.yes && !target->saved && !Confirm(out)) {
        out << CancelledMessage();
        refused = true;
      } else {
        board->Expect(action.plan());
        board->Show();
        action.Apply();
        board->Hide();
      }
    }
  }
  action.Finish();

  const auto errors = action.NodeErrors();
  if (action.applied()) {
    // Not the plan again (the progress lines said what changed): only what
    // went wrong, folded, then a line per node and how long it took.
    TextOptions problems = text;
    problems.problems_only = true;
    problems.summary = false;
    if (const std::string listed = RenderPlanText(action.plan(), spec->inventory, errors, problems);
        !listed.empty()) {
      out << "\nNot done:\n" << listed;
    }
    out << RecapText(
        action.plan(), spec->inventory, timer.Durations(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
        action.Outcome(), text.width);
  }
  if (interrupted.load()) {
    out << InterruptedMessage();
  }
  out << JournalLine(action.run_dir());
  const PlanSummary summary = action.plan().Summarize();
  int code = summary.failed + summary.blocked + summary.errors > 0 ? kExitError : kExitOk;
  if (refused || !errors.empty()) {
    code = kExitError;
  } else if (interrupted.load()) {
    code = kExitInterrupted;
  }
  if (json) {
    const nlohmann::json doc = {
        {"format", "gpuctl.apply/v1"},
        {"outcome", action.Outcome()},
        {"exit_code", code},
        {"seconds",
         std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()},
        {"run_dir", action.run_dir()},
        {"journal", action.run_dir() + "/journal.jsonl"},
        {"plan", PlanToJson(action.plan(), HeaderFor(*spec), errors)}};
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }
  return code;
}

// The options apply and reset share, after the target.
void AddRunOptions(CLI::App& cmd, ApplyCliOptions& options) {
  cmd.add_flag("--fail-fast", options.fail_fast, "Stop every node at the first failure");
  cmd.add_option("--max-fail", options.max_fail_percent,
                 "Stop every node once more than this percentage of nodes failed")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd.add_option("--batch", options.batch,
                 "Reboot at most this many nodes at once (a count, or a percentage like 25%); the "
                 "next batch starts when the previous one is back and verified. Also how many "
                 "members of a running cluster are drained at once (default 1)");
  cmd.add_option("--drain-timeout", options.drain_timeout_s,
                 "Seconds a member's drain may take (pods evicted within their disruption "
                 "budgets, or Slurm jobs ending) before its change is given up")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_flag("--no-drain", options.no_drain,
               "Disrupt members of a running cluster without draining them first (a "
               "maintenance window with nothing running)");
  cmd.add_option("--reboot-timeout", options.reboot_timeout_s,
                 "Seconds to wait for a rebooted node to answer SSH again")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_flag("--show-ok", options.show_ok,
               "List the steps that are already true too (hidden by default)");
  auto* opts = &options;
  cmd.add_flag(
      "--hide-ok", [opts](std::int64_t) { opts->show_ok = false; },
      "List only what changes (the default)");
  cmd.add_flag("--break-lock", options.break_lock,
               "Take the node locks even if another run holds them (only if that run is gone)");
  cmd.add_option("--run-dir", options.run_dir,
                 "Where the journal goes (default: $XDG_STATE_HOME/gpuctl/<cluster>/runs/<time>)");
  AddConnectOptions(cmd, options.connect);
}

}  // namespace

void SetApplyCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto options = std::make_shared<ApplyCliOptions>();
  auto* cmd = app.add_subcommand(
      "apply",
      "Make the cluster match the inventory: plan, confirm, change, verify.\n"
      "Given a saved plan (from `plan --out`), applies exactly that or refuses if a node moved.\n"
      "Exit status: 0 converged, 1 a step failed or input was refused, 130 interrupted.");
  cmd->add_option("target", options->target, "Inventory YAML file, or a saved plan JSON")
      ->required();
  cmd->add_flag("-y,--yes", options->yes, "Apply without asking for confirmation");
  AddRunOptions(*cmd, *options);
  cmd->callback([options, &global, &exit_code] { exit_code = RunApply(*options, global); });
}

void SetResetCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto options = std::make_shared<ApplyCliOptions>();
  options->reset = true;
  auto* cmd = app.add_subcommand(
      "reset",
      "Undo what gpuctl set up on the nodes --limit/--exclude choose (every node without them): "
      "they leave the cluster (drained, kubeadm reset, out of slurm.conf, NFS unmounted; the "
      "whole cluster taken down when every node goes), gpuctl's files are restored or removed, "
      "its holds and the units it enabled undone, and with --packages the packages it "
      "installed removed. Shows the plan and asks first; a second reset changes nothing.\n"
      "Exit status: 0 done or nothing to undo, 1 a step failed or input was refused, "
      "130 interrupted.");
  cmd->add_option("inventory", options->target, "Inventory YAML file")->required();
  cmd->add_flag("-y,--yes", options->yes, "Reset without asking for confirmation");
  cmd->add_flag("--packages", options->packages,
                "Also remove the packages gpuctl installed (those not installed before it)");
  AddRunOptions(*cmd, *options);
  cmd->callback([options, &global, &exit_code] { exit_code = RunApply(*options, global); });
}

}  // namespace gpuctl::cli
