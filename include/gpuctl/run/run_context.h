// RunContext: everything one run (plan, apply or check) shares across its
// phases: the inputs, the plan being filled in, the open connections, and
// which nodes have failed. Phases read and write it; nothing else is global.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/run/parallel.h"
#include "gpuctl/run/redact.h"
#include "gpuctl/run/reporter.h"
#include "gpuctl/run/script_runner.h"
#include "gpuctl/run/step_inputs.h"
#include "gpuctl/transport/transport.h"

namespace gpuctl {

struct RunOptions {
  std::size_t concurrency = kDefaultConcurrency;
  bool trust_new_host_keys = false;
};

class RunContext {
 public:
  RunContext(const Inventory& inventory_in, const Catalog& catalog_in, Plan& plan_in,
             Transport& transport_in, Reporter& reporter_in, RunOptions options_in = {})
      : inventory(inventory_in),
        catalog(catalog_in),
        plan(plan_in),
        transport(transport_in),
        reporter(reporter_in),
        options(options_in) {}

  const Inventory& inventory;
  const Catalog& catalog;
  Plan& plan;
  Transport& transport;
  Reporter& reporter;
  RunOptions options;
  Redactor redactor;
  // Values steps read from other nodes, and secrets.
  StepInputs inputs{inventory, catalog.prelude(), transport,
                    redactor,  reporter,          options.trust_new_host_keys};

  // The node's open connection, or nullptr if it has none (never connected,
  // or failed). Each node's connection is used by one thread at a time.
  Connection* ConnectionTo(const std::string& node);
  void SetConnection(const std::string& node, std::unique_ptr<Connection> connection);
  void DropConnection(const std::string& node);

  // How this run's scripts reach the node on `connection` (its prelude, its
  // reporter, its redactor).
  [[nodiscard]] ScriptRunner RunnerFor(Connection& connection) {
    return ScriptRunner(connection, reporter, redactor, catalog.prelude());
  }

  // Marks the node failed: later phases skip it. The first error is kept.
  void FailNode(const std::string& node, const std::string& error);
  [[nodiscard]] bool IsFailed(const std::string& node) const;
  [[nodiscard]] std::map<std::string, std::string> NodeErrors() const;

  // Leaves a node out of the run before it starts (a limited run that does
  // not need it): not connected to, not an error, not among HealthyNodes.
  void LeaveOut(const std::string& node);
  // Nodes still in the run (neither failed nor left out), in inventory order.
  [[nodiscard]] std::vector<const Node*> HealthyNodes() const;

  // The OS each node's os-release identified (the identify phase), for the
  // plan phase to resolve `os: auto` with.
  void SetNodeOs(const std::string& node, const OsRelease& os);
  [[nodiscard]] std::map<std::string, OsRelease> NodeOs() const;
  // Each node's host key as its connection verified it (Connection::HostKey).
  void SetNodeHostKey(const std::string& node, const std::string& key);
  [[nodiscard]] std::map<std::string, std::string> NodeHostKeys() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Connection>> connections_;
  std::map<std::string, std::string> node_errors_;
  std::set<std::string> left_out_;  // LeaveOut
  std::map<std::string, OsRelease> node_os_;
  std::map<std::string, std::string> node_host_keys_;
};

}  // namespace gpuctl
