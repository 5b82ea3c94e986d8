#include "cli/commands.h"

#include <cstdlib>

#include <fmt/format.h>

#include "gpuctl/model/yaml_source.h"

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
  // Not split at commas by CLI11: gpu[1-3,7] holds one (node_range.h).
  app.add_option("--limit", global.limit,
                 "Work on these nodes only: names or ranges, comma-separated "
                 "(worker1,gpu[01-16],gpu[1-3,7]); others are read where a step needs "
                 "their state, never changed; repeatable")
      ->allow_extra_args(false)
      ->envname("GPUCTL_LIMIT");
  app.add_option("--exclude", global.exclude,
                 "Leave these nodes out (names or ranges, as --limit); repeatable")
      ->allow_extra_args(false)
      ->envname("GPUCTL_EXCLUDE");
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

std::string UnknownOptionHint(CLI::App& app) {
  CLI::App* command = &app;
  for (CLI::App* sub : app.get_subcommands()) {
    command = sub;
  }
  if (command->get_prefix_command()) {
    return "";  // `gpuctl lab`: what follows is the lab script's
  }
  std::vector<std::string> known;
  for (const CLI::App* scope : std::vector<const CLI::App*>{command, &app}) {
    for (const CLI::Option* option : scope->get_options()) {
      for (const std::string& name : option->get_lnames()) {
        known.push_back("--" + name);
      }
    }
  }
  std::vector<std::string> left = app.remaining();
  if (command != &app) {
    const auto more = command->remaining();
    left.insert(left.end(), more.begin(), more.end());
  }
  std::string hint;
  for (const std::string& word : left) {
    if (!word.starts_with("--")) {
      continue;
    }
    const std::string name = word.substr(0, word.find('='));
    hint += fmt::format("gpuctl {}: unknown option '{}'{}\n", command->get_name(), name,
                        yaml::DidYouMean(name, known));
  }
  if (!hint.empty()) {
    hint += fmt::format("Run gpuctl {} --help for its options.\n", command->get_name());
  }
  return hint;
}

}  // namespace gpuctl::cli
