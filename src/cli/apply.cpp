// gpuctl apply: compute the plan exactly as `plan` does, show it, confirm,
// then make it true; or apply a saved plan if nothing moved since.
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/interrupt.h"
#include "gpuctl/drift.h"
#include "gpuctl/executor.h"
#include "gpuctl/input_file.h"
#include "gpuctl/journal.h"
#include "gpuctl/phase.h"
#include "gpuctl/script_trace.h"
#include "gpuctl/ssh_transport.h"

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
  bool break_lock = false;
  std::string run_dir;
};

// A file that cannot be read is "not a plan", so the inventory loader reports
// why (input_file.h), once.
bool LooksLikeSavedPlan(const std::string& path) {
  std::string why;
  const auto head = ReadInputPrefix(path, 4096, why);
  const std::size_t first = head ? head->find_first_not_of(" \t\r\n") : std::string::npos;
  return first != std::string::npos && (*head)[first] == '{';
}

std::string DefaultRunDir(const std::string& cluster) {
  const char* state = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  const std::filesystem::path base =
      state != nullptr && *state != '\0'
          ? std::filesystem::path(state)
          : std::filesystem::path(home != nullptr ? home : "/root") / ".local/state";
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return (base / "gpuctl" / cluster / "runs" / fmt::format("{:%Y%m%dT%H%M%SZ}-{}", now, getpid()))
      .string();
}

std::string Holder() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const passwd* account = getpwuid(geteuid());
  const char* user = account != nullptr ? account->pw_name : std::getenv("USER");
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return fmt::format("user={} host={} pid={} started={:%Y-%m-%dT%H:%M:%SZ}",
                     user != nullptr ? user : "?", host, getpid(), now);
}

// Said before the confirmation: which nodes go down, and how many at once.
std::string RebootNotice(const std::vector<std::string>& nodes, std::size_t batch) {
  if (nodes.empty()) {
    return "";
  }
  constexpr std::size_t kNamed = 8;
  std::string names;
  for (std::size_t i = 0; i < nodes.size() && i < kNamed; ++i) {
    names += (i == 0 ? "" : ", ") + nodes[i];
  }
  if (nodes.size() > kNamed) {
    names += fmt::format(" and {} more", nodes.size() - kNamed);
  }
  const std::string pace = nodes.size() == 1 ? ""
                           : batch == 0
                               ? "; all at once (no --batch; --batch 1 reboots one at a time)"
                               : fmt::format("; at most {} at a time (--batch)", batch);
  return fmt::format("\nReboots: {} node{} ({}){}.\n", nodes.size(), nodes.size() == 1 ? "" : "s",
                     names, pace);
}

bool Confirm() {
  if (isatty(STDIN_FILENO) == 0) {
    std::cerr << "gpuctl: stdin is not a terminal, so apply cannot ask for confirmation; "
                 "re-run with --yes to apply without asking\n";
    return false;
  }
  std::cout << "\nApply these changes? Only 'yes' is accepted: " << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "yes";
}

int RunApply(const ApplyCliOptions& options, const GlobalOptions& global) {
  std::optional<SavedPlan> saved;
  std::string inventory_path = options.target;
  if (LooksLikeSavedPlan(options.target)) {
    std::string why;
    const auto text = ReadInputFile(options.target, kMaxSavedPlanBytes, why);
    if (!text) {
      std::cerr << options.target << ": error: " << why << '\n';
      return kExitError;
    }
    try {
      saved = PlanFromJson(nlohmann::json::parse(*text), options.target);
    } catch (const LoadError& e) {
      std::cerr << e.what();
      return kExitError;
    } catch (const nlohmann::json::exception& e) {
      std::cerr << options.target << ": error: not valid JSON: " << e.what() << '\n';
      return kExitError;
    }
    inventory_path = saved->header.inventory_path;
  }
  auto inputs = LoadInputs(inventory_path, global, std::cerr);
  if (!inputs) {
    return kExitError;
  }
  if (saved) {
    if (saved->header.inventory_digest != inputs->inventory_digest) {
      std::cerr << fmt::format(
          "gpuctl: refusing {}: {} changed since the plan was saved; run plan again\n",
          options.target, inventory_path);
      return kExitError;
    }
    if (saved->header.catalog_digest != inputs->catalog.Digest()) {
      std::cerr << fmt::format(
          "gpuctl: refusing {}: the step catalog changed since the plan was saved; "
          "run plan again\n",
          options.target);
      return kExitError;
    }
  }

  const std::string run_dir =
      options.run_dir.empty() ? DefaultRunDir(inputs->inventory.cluster) : options.run_dir;
  const std::string runs_root = std::filesystem::path(run_dir).parent_path().string();
  const std::string previous = LatestRunDir(runs_root);
  Journal journal(run_dir);
  LineReporter lines(std::cerr, global.verbosity);
  TeeReporter reporter;
  reporter.Add(&lines);
  reporter.Add(&journal);
  if (!previous.empty()) {
    for (const auto& [node, step] : UnfinishedSteps(previous + "/journal.jsonl")) {
      reporter.Note(node, fmt::format("the previous run stopped during {}; its probe decides now "
                                      "whether it still needs to run",
                                      step));
    }
  }

  Plan plan;  // built by the plan phase, once every node's OS is known
  auto transport = TraceScriptsFromEnv(MakeSshTransport());
  RunContext context(inputs->inventory, inputs->catalog, plan, *transport, reporter,
                     {options.connect.concurrency, options.connect.trust_new_host_keys});
  TraceRedactor(*transport, context.redactor);
  ApplyOptions apply;
  apply.fail_fast = options.fail_fast;
  apply.max_fail_percent = options.max_fail_percent;
  apply.reboot_timeout = std::chrono::seconds(options.reboot_timeout_s);
  try {
    apply.batch = ParseBatch(options.batch, inputs->inventory.nodes.size());
  } catch (const std::exception& e) {
    std::cerr << "gpuctl: --batch: " << e.what() << '\n';
    return kExitError;
  }
  apply.interrupted = &InstallInterruptHandler();

  TextOptions text;
  text.color = !global.no_color && isatty(STDOUT_FILENO) != 0;
  bool refused = false;
  auto proceed = [&](RunContext& ctx) {
    if (saved) {
      // An `os: auto` node reinstalled with another OS keeps the inventory's
      // digest; its recorded OS is what tells.
      auto drift = CompareNodeOs(saved->header.node_os, ctx.inventory);
      for (auto& d : CompareWithSaved(saved->plan, ctx.plan)) {
        drift.push_back(std::move(d));
      }
      if (!drift.empty()) {
        std::cerr << "gpuctl: refusing the saved plan: the nodes moved since it was made:\n";
        for (const auto& d : drift) {
          std::cerr << "  " << d << '\n';
        }
        refused = true;
        return false;
      }
    }
    std::cout << RenderPlanText(ctx.plan, ctx.inventory, ctx.NodeErrors(), text);
    if (!ctx.plan.Summarize().Pending()) {
      if (ctx.NodeErrors().empty()) {
        std::cout << "\nNo changes. The cluster matches the inventory.\n";
      } else {
        std::cout << fmt::format(
            "\nNothing to change on the reachable nodes; {} node(s) failed "
            "(above) and were not checked.\n",
            ctx.NodeErrors().size());
      }
      return false;
    }
    if (!ctx.NodeErrors().empty()) {
      std::cout << "\nNodes with errors above are left out; the others go on.\n";
    }
    std::cout << RebootNotice(ctx.plan.Summarize().rebooting_nodes, apply.batch);
    if (!options.yes && !saved && !Confirm()) {
      std::cout << "Apply cancelled; nothing was changed.\n";
      refused = true;
      return false;
    }
    return true;
  };
  bool proceeded = false;
  Pipeline pipeline;
  pipeline.Add(MakeConnectPhase())
      .Add(MakeIdentifyPhase())
      .Add(MakePlanPhase(inputs->inventory))
      .Add(MakeLockPhase(std::filesystem::path(run_dir).filename().string(), Holder(),
                         options.break_lock))
      .Add(MakeProbePhase())
      .Add(MakeApplyPhase(apply, proceed, proceeded));
  pipeline.Run(context);

  const auto errors = context.NodeErrors();
  {
    std::ofstream out(std::filesystem::path(run_dir) / "plan.json");
    out << PlanToJson(plan, HeaderFor(*inputs), errors).dump(2) << '\n';
  }
  if (proceeded) {
    std::cout << "\n" << RenderPlanText(plan, inputs->inventory, errors, text);
  }
  if (apply.interrupted->load()) {
    std::cout << "Interrupted: steps in flight finished; reboots not yet started were cancelled "
                 "and the rest did not start. Run apply again to continue.\n";
  }
  std::cout << "Journal: " << run_dir << "/journal.jsonl\n";
  if (refused || !errors.empty()) {
    return kExitError;
  }
  const PlanSummary summary = plan.Summarize();
  if (apply.interrupted->load()) {
    return kExitInterrupted;
  }
  return summary.failed + summary.blocked + summary.errors > 0 ? kExitError : kExitOk;
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
  cmd->add_flag("--fail-fast", options->fail_fast, "Stop every node at the first failure");
  cmd->add_option("--max-fail", options->max_fail_percent,
                  "Stop every node once more than this percentage of nodes failed")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--batch", options->batch,
                  "Reboot at most this many nodes at once (a count, or a percentage like 25%); the "
                  "next batch starts when the previous one is back and verified");
  cmd->add_option("--reboot-timeout", options->reboot_timeout_s,
                  "Seconds to wait for a rebooted node to answer SSH again")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--break-lock", options->break_lock,
                "Take the node locks even if another run holds them (only if that run is gone)");
  cmd->add_option("--run-dir", options->run_dir,
                  "Where the journal goes (default: $XDG_STATE_HOME/gpuctl/<cluster>/runs/<time>)");
  AddConnectOptions(*cmd, options->connect);
  cmd->callback([options, &global, &exit_code] { exit_code = RunApply(*options, global); });
}

}  // namespace gpuctl::cli
