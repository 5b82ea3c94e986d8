// gpuctl plan: probe every node and show what apply would change.
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/progress.h"
#include "gpuctl/action/read_only.h"
#include "gpuctl/util/terminal.h"

namespace gpuctl::cli {

namespace {

struct PlanOptions {
  std::string inventory;
  std::string out;
  ConnectOptions connect;
  bool hide_ok = false;
};

int RunPlan(const PlanOptions& options, const GlobalOptions& global) {
  auto spec = LoadSpec(options.inventory, SpecOptionsFrom(global), std::cerr);
  if (!spec) {
    return kExitError;
  }
  auto transport = NodeTransport();
  auto progress = MakeProgress(global, *spec, false);
  const ReadOnlyResult result = PlanAction(*spec, *transport, *progress, options.connect.Run());
  progress->Hide();  // the result goes below, not under a board
  const Plan& plan = result.plan;
  const auto& errors = result.node_errors;
  const PlanHeader header = HeaderFor(*spec);
  if (!options.out.empty()) {
    std::ofstream out(options.out);
    WritePlanJson(out, plan, header, errors);
    if (!out) {
      std::cerr << "gpuctl: cannot write " << options.out << '\n';
      return kExitError;
    }
  }
  if (global.output == "json") {
    WritePlanJson(std::cout, plan, header, errors);
  } else {
    TextOptions text;
    text.color = !global.no_color && isatty(STDOUT_FILENO) != 0;
    text.show_ok = !options.hide_ok;
    text.width = TerminalWidth(STDOUT_FILENO);
    WritePlanText(std::cout, plan, spec->inventory, errors, text);
    if (!options.out.empty()) {
      std::cout << SavedPlanNotice(options.out);
    }
  }
  const PlanSummary summary = plan.Summarize();
  if (!errors.empty() || summary.errors > 0 || summary.refused > 0) {
    return kExitError;
  }
  return summary.Pending() ? kExitChanges : kExitOk;
}

}  // namespace

void SetPlanCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto options = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand("plan",
                                 "Probe every node (read-only) and show what apply would change.\n"
                                 "Exit status: 0 nothing to change, 2 changes pending, 1 error.");
  cmd->add_option("inventory", options->inventory, "Inventory YAML file")->required();
  cmd->add_option("--out", options->out, "Save the plan (with what each probe saw) as JSON");
  cmd->add_flag("--hide-ok", options->hide_ok, "List only what would change");
  AddConnectOptions(*cmd, options->connect);
  cmd->callback([options, &global, &exit_code] { exit_code = RunPlan(*options, global); });
}

}  // namespace gpuctl::cli
