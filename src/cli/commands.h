// The CLI's subcommands, one file each; main.cpp wires them together.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gpuctl::cli {

// Exit codes a script can rely on (docs/exit-codes.md).
inline constexpr int kExitOk = 0;             // nothing to change / cluster matches
inline constexpr int kExitError = 1;          // bad input, unreachable node, failed step
inline constexpr int kExitChanges = 2;        // plan: changes pending; check: mismatches found
inline constexpr int kExitInterrupted = 130;  // apply: stopped by Ctrl-C (128 + SIGINT)

struct GlobalOptions {
  int verbosity = 0;
  std::string playbooks;             // catalog directory; empty: default
  std::vector<std::string> only;     // --only: these steps and what they need
  std::vector<std::string> limit;    // --limit: these nodes (names, ranges)
  std::vector<std::string> exclude;  // --exclude: not these nodes
  std::string output = "text";
  bool no_color = false;
};

void AddGlobalOptions(CLI::App& app, GlobalOptions& global);
// After a failed parse: "gpuctl plan: unknown option '--hide-okk' (did you
// mean '--hide-ok'?)" for each unknown option left over, or "" if none.
std::string UnknownOptionHint(CLI::App& app);
void SetValidateCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetPlanCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetApplyCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetResetCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetCheckCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetCatalogCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetLabCommand(CLI::App& app, int& exit_code);
void SetRunsCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetLogsCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetInitCommand(CLI::App& app, int& exit_code);
// Both read the whole tree: added after every other command.
void SetCompletionCommand(CLI::App& app, const GlobalOptions& global, int& exit_code);
void SetManCommand(CLI::App& app, int& exit_code);

}  // namespace gpuctl::cli
