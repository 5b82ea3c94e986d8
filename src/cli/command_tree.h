// The command line as data, read from CLI11's own tree: what `gpuctl
// completion` and `gpuctl man` are generated from, so neither can drift from
// the options the parser accepts.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gpuctl::cli {

struct OptionDoc {
  std::vector<std::string> names;  // "-o", "--output"; empty for a positional
  std::string positional;          // the positional's name ("inventory")
  std::string description;
  std::string value;                 // "FORMAT", "" for a flag
  std::vector<std::string> choices;  // from a CLI::IsMember check
  std::string envname;               // "GPUCTL_ONLY", or ""
  std::string default_value;         // as --help shows it, or ""
};

struct CommandDoc {
  std::string name;
  std::string description;
  bool passes_arguments_on = false;  // `gpuctl lab`: the rest is the lab script's
  std::vector<OptionDoc> options;    // its own, --help first; positionals last
};

struct CommandTreeDoc {
  std::string description;
  std::vector<OptionDoc> global;  // gpuctl's own, accepted after any command too
  std::vector<CommandDoc> commands;
};

// Hidden commands and options (CLI11 group "") are left out.
CommandTreeDoc DescribeCommands(const CLI::App& app);

// The step ids and their groups ("k8s.join", "k8s") of the catalog gpuctl
// would load (--playbooks, $GPUCTL_PLAYBOOKS, installed, source tree); empty
// if it does not load.
std::vector<std::string> StepNames(const std::string& playbooks);

}  // namespace gpuctl::cli
