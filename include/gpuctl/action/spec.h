// Spec: what the cluster should be — the inventory and the step catalog, both
// validated — read before any node is contacted. Every command that works on
// nodes starts from one, and a saved plan records its digests.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/view/plan_view.h"

namespace gpuctl {

struct Spec {
  Inventory inventory;
  Catalog catalog;
  std::string inventory_digest;  // of the file's bytes, as validated
  // --limit/--exclude: the nodes this run may change; empty: every node.
  // Nodes outside it are still read (probed) where a target's step waits for
  // their state (the master's k8s.init for a worker's join), never changed.
  std::set<std::string> targets;
  // With targets: the nodes the run contacts at all, the targets and the
  // nodes whose state their steps read (NodesReached); the others are not
  // connected to, so a node that is down outside the limit does not stop it.
  // Empty: every node.
  std::set<std::string> reach;
  // `gpuctl reset`: the nodes it chose (PrepareReset), marked absent and
  // reset in `inventory`; empty in every other run.
  std::set<std::string> reset_nodes;
};

struct SpecOptions {
  std::string playbooks;          // catalog directory; empty: the installed one
  std::vector<std::string> only;  // --only: these steps and what they need; empty: all
  // --limit / --exclude: node names or ranges (gpu[01-16], gpu[1-3,7]),
  // comma-separated (node_range.h); empty: every node.
  std::vector<std::string> limit;
  std::vector<std::string> exclude;
};

// Reads and validates both, printing every diagnostic (errors and warnings)
// to `err`. Returns nullopt when either has an error, after saying that
// nothing was sent to any node.
std::optional<Spec> LoadSpec(const std::string& inventory_path, const SpecOptions& options,
                             std::ostream& err);

// --limit on a built plan: the items of `targets` and, transitively, the
// items on other nodes they wait for (read, never changed). Every item
// when `targets` is empty.
Plan LimitPlan(const Plan& plan, const std::set<std::string>& targets);

// The nodes a run limited to `targets` must contact: those of LimitPlan over
// the inventory's plan. Built before any node says which OS it runs, so a
// node with `os: auto` counts under either family (a step of one family
// only may link it): a node that might be needed is contacted.
std::set<std::string> NodesReached(const Inventory& inventory, const Catalog& catalog,
                                   const std::set<std::string>& targets);

// The items of `plan` outside `targets` that are not known to be done
// (would change, or cannot tell yet): "m1 k8s.init", one per item, in plan
// order. A limited run with any of these refuses (docs/exit-codes.md).
std::vector<std::string> ChangesOutsideLimit(const Plan& plan,
                                             const std::set<std::string>& targets);

// The message a limited run refuses with, naming those items and the nodes
// they are needed by; "" when there are none.
std::string OutsideLimitRefusal(const Plan& plan, const std::set<std::string>& targets);

// The phases a limited run adds (phase.h): after the plan phase, one that
// keeps LimitPlan of the plan; after probing, one that refuses when a node
// outside the limit would change: each such node fails with the items it
// needs (so plan and apply end with exit 1, naming node and step) and, when
// `stop_all`, every item of the plan is marked not to be worked on (apply
// changes nothing). Both do nothing without targets.
std::unique_ptr<Phase> MakeLimitPhase(const std::set<std::string>& targets);
// First in a limited run: leaves the nodes outside `reach` out of it
// (RunContext::LeaveOut); nothing without a reach.
std::unique_ptr<Phase> MakeReachPhase(const std::set<std::string>& reach);
std::unique_ptr<Phase> MakeLimitRefusalPhase(const std::set<std::string>& targets, bool stop_all);

// The header of a plan of `spec`; call it after the run resolved each node's
// OS (the plan phase), which the header records.
PlanHeader HeaderFor(const Spec& spec);

}  // namespace gpuctl
