// What every command that touches nodes needs first: the inventory and the
// catalog, both validated, with every problem printed before giving up.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "cli/commands.h"
#include "gpuctl/catalog.h"
#include "gpuctl/inventory.h"
#include "gpuctl/phase.h"
#include "gpuctl/plan_view.h"

namespace gpuctl::cli {

struct Inputs {
  Inventory inventory;
  Catalog catalog;
  std::string inventory_digest;  // of the file's bytes
};

// Loads both, printing diagnostics (errors and warnings) to `err`. Returns
// nullopt when either has an error.
std::optional<Inputs> LoadInputs(const std::string& inventory_path, const GlobalOptions& global,
                                 std::ostream& err);

// The header of a plan of `inputs`; call it after the run resolved each
// node's OS (the plan phase), which the header records.
PlanHeader HeaderFor(const Inputs& inputs);

// Options shared by plan, apply and check.
struct ConnectOptions {
  std::size_t concurrency = 0;  // 0: default
  bool trust_new_host_keys = false;
};
void AddConnectOptions(CLI::App& cmd, ConnectOptions& options);

// Connects to every node over SSH, reads what OS each runs (resolving
// `os: auto` in inputs.inventory), builds `plan` with `scope` and runs one
// read-only phase (probe or check) over it; progress goes to stderr. Returns
// the nodes that failed.
std::map<std::string, std::string> RunReadOnly(Inputs& inputs, Plan& plan, PlanScope scope,
                                               std::unique_ptr<Phase> phase,
                                               const ConnectOptions& connect,
                                               const GlobalOptions& global);

}  // namespace gpuctl::cli
