// gpuctl runs / gpuctl logs: the apply runs on record (run_history.h) and
// what one of them ran, with its output. Neither contacts a node or needs
// the inventory: the runs live under gpuctl's state directory.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "gpuctl/run/run_history.h"
#include "gpuctl/view/runs_view.h"

namespace gpuctl::cli {
namespace {

struct LogsOptions {
  std::string run = "last";
  std::string cluster;
  LogFilter filter;
};

}  // namespace

void SetRunsCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "runs",
      "List the apply runs on record (newest last): when, how long, how each ended, what it\n"
      "changed, and the command. Runs live under $XDG_STATE_HOME/gpuctl/<cluster>/runs.");
  auto cluster = std::make_shared<std::string>();
  cmd->add_option("--cluster", *cluster, "Only this cluster's runs (the inventory's cluster name)");
  cmd->callback([cluster, &global, &exit_code] {
    const auto runs = ListRuns(StateDir(), *cluster);
    if (global.output == "json") {
      WriteRunsJson(std::cout, runs);
    } else {
      WriteRunsText(std::cout, runs);
    }
    exit_code = kExitOk;
  });
}

void SetLogsCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "logs",
      "Show what a run did: each command with its exit status, duration and the tail of its\n"
      "output, each step's outcome, notes and failures. -o json prints the journal's lines.");
  auto options = std::make_shared<LogsOptions>();
  cmd->add_option("run", options->run,
                  "The run: its id from `gpuctl runs`, a unique prefix of it, or last")
      ->capture_default_str();
  cmd->add_option("--cluster", options->cluster, "Look among this cluster's runs only");
  cmd->add_option("--node", options->filter.node, "Only this node's lines");
  cmd->add_option("--step", options->filter.step,
                  "Only this step's lines (a step id, or a group such as k8s)");
  cmd->callback([options, &global, &exit_code] {
    std::string why;
    const auto run = FindRun(ListRuns(StateDir(), options->cluster), options->run, why);
    if (!run) {
      std::cerr << "gpuctl logs: " << why << '\n';
      exit_code = kExitError;
      return;
    }
    const bool json = global.output == "json";
    if (!json) {
      std::cout << "Run " << run->id << " (cluster " << run->cluster << "), journal " << run->dir
                << "/journal.jsonl\n";
    }
    const bool read = ReadRunEvents(
        *run, options->filter,
        [json](const nlohmann::json& event) {
          if (json) {
            std::cout << event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      << '\n';
          } else {
            std::cout << LogEventText(event);
          }
        },
        why);
    if (!read) {
      std::cerr << "gpuctl logs: " << run->dir << "/journal.jsonl: " << why << '\n';
      exit_code = kExitError;
      return;
    }
    exit_code = kExitOk;
  });
}

}  // namespace gpuctl::cli
