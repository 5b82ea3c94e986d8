// Step parameters: the inventory values a step's scripts may read.
//
// Each is exported to the script as GPUCTL_<NAME> (upper case). Scripts get
// only the parameters their step declares, so a step's rendered form (and the
// saved plan's digest of it) changes exactly when an input it uses changes.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpuctl/model/inventory.h"

namespace gpuctl {

// Every parameter name a step may declare, sorted.
const std::vector<std::string>& KnownParameters();
bool IsKnownParameter(const std::string& name);

// A parameter value that would break the file it is written into: a line
// break in a single-line value or in a field of a line-oriented one (hosts,
// nfs_exports, nfs_mounts, slurm_partitions, ...), whitespace in such a
// field. The inventory loader refuses every such value by kind
// (value_kinds.h), so this is gpuctl's bug: the plan is never built, rather
// than a config file silently gaining a line.
class RenderError : public std::logic_error {
 public:
  RenderError(const std::string& parameter, const std::string& problem);
};

// Values of all known parameters for one node of an inventory. Throws
// RenderError for a value that would break its format (above).
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
