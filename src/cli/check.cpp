// gpuctl check: does the cluster still match the inventory? Probes only.
#include <unistd.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/progress.h"
#include "gpuctl/action/read_only.h"
#include "gpuctl/util/terminal.h"
#include "gpuctl/view/check_view.h"

namespace gpuctl::cli {
namespace {

struct CheckOptions {
  std::string inventory;
  bool deep = false;
  bool hide_ok = false;
  ConnectOptions connect;
};

int RunCheck(const CheckOptions& options, const GlobalOptions& global) {
  auto spec = LoadSpec(options.inventory, SpecOptionsFrom(global), std::cerr);
  if (!spec) {
    return kExitError;
  }
  auto transport = NodeTransport();
  auto progress = MakeProgress(global, *spec, false);
  const ReadOnlyResult result =
      CheckAction(*spec, *transport, *progress, options.connect.Run(), options.deep);
  progress->Hide();  // the result goes below, not under a board
  const Plan& plan = result.plan;
  const auto& errors = result.node_errors;
  const CheckReport report =
      MakeCheckReport(plan, spec->catalog, spec->inventory, errors, options.deep);
  if (global.output == "json") {
    std::cout << CheckToJson(report).dump(2) << '\n';
  } else {
    CheckTextOptions text;
    text.hide_ok = options.hide_ok;
    text.width = TerminalWidth(STDOUT_FILENO);
    std::cout << RenderCheckText(report, text);
  }
  if (!errors.empty()) {
    return kExitError;
  }
  return report.mismatches.empty() ? kExitOk : kExitChanges;
}

}  // namespace

void SetCheckCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto options = std::make_shared<CheckOptions>();
  auto* cmd = app.add_subcommand(
      "check",
      "Probe every node (read-only) and list where the cluster no longer matches the inventory.\n"
      "Exit status: 0 matches, 2 mismatches found, 1 error (e.g. a node unreachable).");
  cmd->add_option("inventory", options->inventory, "Inventory YAML file")->required();
  cmd->add_flag("--deep", options->deep,
                "Also run the deep validations (a GPU pod, NCCL all_reduce_perf across nodes, "
                "ib_send_bw between node pairs) and report their figures");
  cmd->add_flag("--hide-ok", options->hide_ok,
                "List only what does not hold: deep validations that pass are left out too "
                "(-o json keeps them)");
  AddConnectOptions(*cmd, options->connect);
  cmd->callback([options, &global, &exit_code] { exit_code = RunCheck(*options, global); });
}

}  // namespace gpuctl::cli
