// gpuctl's entry point: builds the command tree (one file per subcommand under
// src/cli/) and maps outcomes to documented exit codes (docs/exit-codes.md).
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "gpuctl/version.h"

int main(int argc, char** argv) {
  CLI::App app{"gpuctl: provision and check GPU clusters over SSH"};
  app.set_version_flag("--version", std::string("gpuctl ") + gpuctl::kVersion);
  app.require_subcommand(1);
  gpuctl::cli::GlobalOptions global;
  gpuctl::cli::AddGlobalOptions(app, global);
  int exit_code = 0;
  gpuctl::cli::SetValidateCommand(app, global, exit_code);
  gpuctl::cli::SetPlanCommand(app, global, exit_code);
  gpuctl::cli::SetApplyCommand(app, global, exit_code);
  gpuctl::cli::SetCheckCommand(app, global, exit_code);
  gpuctl::cli::SetLabCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : gpuctl::cli::kExitError;
  }
  return exit_code;
}
