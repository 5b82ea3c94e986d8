// Placeholder until the parameter table lands (issue 3); replaced wholesale.
#include "gpuctl/params.h"

namespace gpuctl {

std::map<std::string, std::string> StepEnvironment(const std::vector<std::string>& names,
                                                   const Inventory& /*inventory*/,
                                                   const Node& node) {
  std::map<std::string, std::string> env;
  for (const auto& n : names) {
    if (n == "node_name") env["GPUCTL_NODE_NAME"] = node.name;
  }
  return env;
}

}  // namespace gpuctl
