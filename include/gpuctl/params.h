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

// Secrets a step may name in `secrets:` ("munge_key"), sorted. Each is read
// from the environment variable the inventory names for it, when a script
// runs, and never becomes part of a plan.
const std::vector<std::string>& KnownSecrets();
bool IsKnownSecret(const std::string& name);

// GPUCTL_<NAME>=value for each named secret the inventory provides (an unset
// or empty variable exports nothing).
std::map<std::string, std::string> SecretEnvironment(const std::vector<std::string>& names,
                                                     const Inventory& inventory);

// The variable a parameter, secret or input named `name` is exported as.
std::string ExportName(const std::string& name);

}  // namespace gpuctl
