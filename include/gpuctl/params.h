// Step parameters: the inventory values a step's scripts may read.
//
// Each is exported to the script as GPUCTL_<NAME> (upper case). Scripts get
// only the parameters their step declares, so a step's rendered form (and the
// saved plan's digest of it) changes exactly when an input it uses changes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuctl/inventory.h"

namespace gpuctl {

// Every parameter name a step may declare, sorted.
const std::vector<std::string>& KnownParameters();
bool IsKnownParameter(const std::string& name);

// Values of all known parameters for one node of an inventory.
std::map<std::string, std::string> ParameterValues(const Inventory& inventory, const Node& node);

// The environment for a step's scripts: GPUCTL_<NAME>=value for each name.
std::map<std::string, std::string> StepEnvironment(const std::vector<std::string>& names,
                                                   const Inventory& inventory, const Node& node);

}  // namespace gpuctl
