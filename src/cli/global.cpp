#include "cli/commands.h"

#include <cstdlib>

namespace gpuctl::cli {

void AddGlobalOptions(CLI::App& app, GlobalOptions& global) {
  app.add_flag("-v,--verbose", global.verbosity,
               "Show each command sent and its output (repeat for more)");
  app.add_option("--playbooks", global.playbooks, "Directory of step catalog YAML files")
      ->envname("GPUCTL_PLAYBOOKS");
  app.add_option("--only", global.only,
                 "Work on these steps only, with the steps they depend on: a step id "
                 "(k8s.join) or a group (k8s); repeatable")
      ->delimiter(',')
      // One value per --only (commas for more), so `apply --only k8s inv.yaml`
      // leaves the inventory to the subcommand.
      ->allow_extra_args(false)
      ->envname("GPUCTL_ONLY");
  app.add_flag("--no-color", global.no_color,
               "Plain output without ANSI colours (also when NO_COLOR is set to anything)");
  // no-color.org: any non-empty NO_COLOR turns colour off. CLI11's envname
  // would insist on a boolean ("NO_COLOR=1" yes, "NO_COLOR=yes please" an error).
  if (const char* no_color = std::getenv("NO_COLOR"); no_color != nullptr && *no_color != '\0') {
    global.no_color = true;
  }
  app.add_option("-o,--output", global.output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

}  // namespace gpuctl::cli
