// Drainer: runs the catalog's drain (model/drain.h) for one node of a run:
// asks the cluster whether the node is a member, drains it, resumes it.
//
// Whether a node is a member is asked of the node itself (its kubelet has
// joined, its slurmd runs), over the walker's own connection: a fresh node
// needs no control plane to say it is not one, even while the master is
// down for its own first reboot. The drain and the resume run on the node
// holding the drain's role (the control plane, the Slurm controller), each
// over a connection of its own, so a worker's walker never shares the
// master's session with the master's own walker, and two nodes' drains
// (with --batch above 1) run side by side. They are reported under the
// drained node's name, so `gpuctl logs last --node gpu07` shows them.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/run/redact.h"
#include "gpuctl/run/reporter.h"
#include "gpuctl/run/script_runner.h"
#include "gpuctl/transport/transport.h"

namespace gpuctl {

struct DrainOptions {
  std::chrono::seconds timeout{600};  // a drain (evictions, jobs ending) may take this long
  std::string reason = "gpuctl apply";
  bool trust_new_host_keys = false;
};

class Drainer {
 public:
  enum class Membership {
    kMember,     // in the running cluster: drain before disrupting it
    kNotMember,  // not (yet) part of it, or no cluster runs: nothing to drain
    kUnknown,    // the cluster could not be asked; `why` says why
  };

  Drainer(const Inventory& inventory, const Catalog& catalog, Transport& transport,
          Reporter& reporter, const Redactor& redactor, DrainOptions options);

  // Whether a drain applies to `node` at all (the inventory's orchestrator
  // has one, and some node holds the role it runs on).
  [[nodiscard]] bool Applies(const Node& node) const;
  // Where the node's drain runs ("head"), for messages; "" when none applies.
  [[nodiscard]] std::string RunsOn(const Node& node) const;

  // Runs the member script on the node through `on_node`.
  Membership IsMember(const Node& node, ScriptRunner& on_node, std::string& why);
  // Cordons and empties the node. False with the drain's own words in `why`.
  bool DrainNode(const Node& node, std::string& why);
  bool ResumeNode(const Node& node, std::string& why);

  // The environment the drain's scripts get for `node` (tests).
  [[nodiscard]] std::map<std::string, std::string> Environment(const Node& node) const;

 private:
  // Runs the drain's `script` where the drain runs, reported as the node's
  // `step`. Exit status -1, with `why`, when that node could not be reached.
  CommandResult Run(const Node& node, const std::string Drain::*script, const std::string& step,
                    std::string& why);
  [[nodiscard]] const Node* Holder(const Drain& drain) const;

  const Inventory& inventory_;
  const Catalog& catalog_;
  Transport& transport_;
  Reporter& reporter_;
  const Redactor& redactor_;
  DrainOptions options_;
  std::map<Role, std::vector<const Node*>> holders_;
};

}  // namespace gpuctl
