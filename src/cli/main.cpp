// gpuctl's entry point: builds the command tree (one file per subcommand under
// src/cli/) and maps outcomes to documented exit codes (docs/exit-codes.md).
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "gpuctl/model/params.h"
#include "gpuctl/model/yaml_source.h"
#include "gpuctl/util/text.h"
#include "gpuctl/util/version.h"

int main(int argc, char** argv) {
  // Into a pipe (a CI log, `| tee`) stdout would be block-buffered: the plan
  // arrived at exit, after the progress lines on stderr. Line-buffered, each
  // line leaves when it is complete. std::cout writes through C's stdout
  // (sync_with_stdio is never turned off), so this covers it too.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"gpuctl: provision and check GPU clusters over SSH"};
  app.set_version_flag("--version", std::string("gpuctl ") + gpuctl::kVersion);
  app.require_subcommand(1);
  // `gpuctl apply --only k8s inv.yaml` as well as `gpuctl --only k8s apply
  // inv.yaml`: an option a subcommand does not know is tried on gpuctl's
  // global options. Set before the subcommands are added, which inherit it.
  app.fallthrough();
  gpuctl::cli::GlobalOptions global;
  gpuctl::cli::AddGlobalOptions(app, global);
  int exit_code = 0;
  gpuctl::cli::SetValidateCommand(app, global, exit_code);
  gpuctl::cli::SetPlanCommand(app, global, exit_code);
  gpuctl::cli::SetApplyCommand(app, global, exit_code);
  gpuctl::cli::SetResetCommand(app, global, exit_code);
  gpuctl::cli::SetCheckCommand(app, global, exit_code);
  gpuctl::cli::SetCatalogCommand(app, global, exit_code);
  gpuctl::cli::SetLabCommand(app, exit_code);
  gpuctl::cli::SetRunsCommand(app, global, exit_code);
  gpuctl::cli::SetLogsCommand(app, global, exit_code);
  gpuctl::cli::SetInitCommand(app, exit_code);
  gpuctl::cli::SetCompletionCommand(app, global, exit_code);
  gpuctl::cli::SetManCommand(app, exit_code);
  // gpuctl's own diagnostics (connections, retries, lock decisions) go to
  // stderr through spdlog; user-facing lines go through the Reporter. -vv
  // turns them on, so a bug report can carry them.
  app.parse_complete_callback([&global] {
    auto logger = spdlog::stderr_logger_mt("gpuctl");
    logger->set_pattern("%H:%M:%S.%e gpuctl[%t] %l: %v");
    logger->set_level(global.verbosity >= 2 ? spdlog::level::debug : spdlog::level::warn);
    spdlog::set_default_logger(logger);
    // For the test that runs every example command in README and docs/
    // (docs_examples_test): the command line parses, and nothing runs.
    if (const char* parse_only = std::getenv("GPUCTL_PARSE_ONLY");
        parse_only != nullptr && *parse_only != '\0') {
      throw CLI::Success();
    }
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // `gpuctl pln inv.yaml`: name the command that was meant, not only that
    // one is required.
    if (app.get_subcommands().empty() && !app.remaining().empty()) {
      std::vector<std::string> commands;
      for (const CLI::App* sub : app.get_subcommands({})) {
        if (!sub->get_group().empty()) {  // a hidden command (man) is not offered
          commands.push_back(sub->get_name());
        }
      }
      const std::string word = app.remaining().front();
      if (!word.empty() && word.front() != '-') {
        std::cerr << "gpuctl: unknown command '" << word << "'"
                  << gpuctl::yaml::DidYouMean(word, commands)
                  << "; commands: " << gpuctl::Join(commands) << "\n";
        return gpuctl::cli::kExitError;
      }
    }
    if (e.get_exit_code() == 0) {
      return app.exit(e);  // --help, --version, a parse-only run
    }
    // `gpuctl plan --hide-okk`: name the option that was meant.
    if (const std::string hint = gpuctl::cli::UnknownOptionHint(app); !hint.empty()) {
      std::cerr << hint;
      return gpuctl::cli::kExitError;
    }
    return app.exit(e) == 0 ? 0 : gpuctl::cli::kExitError;
  } catch (const gpuctl::RenderError& e) {
    // A value that would have broken a config file on a node: nothing was
    // sent; say so rather than abort.
    std::cerr << "gpuctl: " << e.what() << '\n';
    return gpuctl::cli::kExitError;
  }
  return exit_code;
}
