#include "cli/progress.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "gpuctl/util/terminal.h"

namespace gpuctl::cli {

std::unique_ptr<LiveBoard> MakeProgress(const GlobalOptions& global, const Spec& spec,
                                        bool show_ok) {
  BoardOptions options;
  options.terminal = BoardFitsTerminal(isatty(STDERR_FILENO) != 0, std::getenv("CI"),
                                       std::getenv("TERM"), global.verbosity);
  options.size_fd = options.terminal ? STDERR_FILENO : -1;
  options.width = TerminalWidth(STDERR_FILENO);
  options.verbosity = global.verbosity;
  options.show_ok = show_ok;
  std::vector<std::string> nodes;
  nodes.reserve(spec.inventory.nodes.size());
  for (const Node& node : spec.inventory.nodes) {
    if (spec.reach.empty() || spec.reach.count(node.name) > 0) {
      nodes.push_back(node.name);
    }
  }
  return std::make_unique<LiveBoard>(std::cerr, options, std::move(nodes));
}

}  // namespace gpuctl::cli
