// Step parameters: the inventory values a step's scripts may read.
//
// Each is exported to the script as GPUCTL_<NAME> (upper case). Scripts get
// only the parameters their step declares, so a step's rendered form (and the
// saved plan's digest of it) changes exactly when an input it uses changes.
#pragma once

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpuctl/model/inventory.h"
#include "gpuctl/util/shared_text.h"

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

// A step's environment: GPUCTL_<NAME> -> value. Values that are the same on
// every node are shared between the items that hold them.
using StepEnv = std::map<std::string, SharedText>;

// The environment as a command carries it to one node.
std::map<std::string, std::string> PlainEnvironment(const StepEnv& env);

// Every known parameter of an inventory, computed once: the values that are
// the same on every node (the versions, the hosts lines, the Slurm node list)
// when the table is built, each node's own (its name, OS, repositories) when
// asked for. Planning N nodes costs N small lookups plus one copy of each
// cluster-wide value, not N copies of values that grow with N.
class NodeParameters;
class ParameterTable {
 public:
  // Throws RenderError for a cluster-wide value that would break its format.
  explicit ParameterTable(const Inventory& inventory);

  // Every known parameter's value for `node`. Throws RenderError as above.
  // The result refers to this table: it must not outlive it.
  [[nodiscard]] NodeParameters For(const Node& node) const;

 private:
  const Inventory& inventory_;
  std::map<std::string, SharedText> cluster_;
  std::map<std::string, std::string> export_names_;  // name -> GPUCTL_NAME
  // repo_* values per OS ("ubuntu-22.04/debian"), filled as nodes ask.
  mutable std::mutex repositories_mutex_;
  mutable std::map<std::string, std::map<std::string, SharedText>> repositories_by_os_;
};

// One node's parameters: its own values, and the table's shared ones.
class NodeParameters {
 public:
  // GPUCTL_<NAME>=value for each of `names`. Throws std::invalid_argument
  // for a name that is not a known parameter (the catalog loader refuses
  // those, so that is a bug).
  [[nodiscard]] StepEnv Environment(const std::vector<std::string>& names) const;
  // Every parameter, as plain strings.
  [[nodiscard]] std::map<std::string, std::string> All() const;

 private:
  friend class ParameterTable;
  NodeParameters(const std::map<std::string, SharedText>& cluster,
                 const std::map<std::string, std::string>& export_names,
                 std::map<std::string, SharedText> own)
      : cluster_(&cluster), export_names_(&export_names), own_(std::move(own)) {}
  const std::map<std::string, SharedText>* cluster_;
  const std::map<std::string, std::string>* export_names_;
  std::map<std::string, SharedText> own_;
};

// Values of all known parameters for one node, as plain strings (tests and
// one-off callers; a plan goes through one ParameterTable).
std::map<std::string, std::string> ParameterValues(const Inventory& inventory, const Node& node);
// ... and one step's environment, as plain strings.
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
