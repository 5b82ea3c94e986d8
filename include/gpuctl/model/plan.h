// Plan: the DAG of (node, step) items for one inventory and catalog, and what
// probes said about each. plan, apply and check are this one computation shown
// three ways (Terraform's rule): `plan` probes and prints it, `apply` probes,
// then walks it in dependency order, `check` probes and compares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/params.h"

namespace gpuctl {

enum class ItemState {
  kUnprobed,
  kSatisfied,        // probe: already true on the node
  kNeedsChange,      // probe: apply would change it
  kKnownAfterApply,  // probe: cannot tell until an earlier step runs
  kNeedsAttention,   // probe: wrong in a way apply cannot fix (hardware, say)
  kRefused,          // probe: needs a change that cannot succeed (preflight)
  kProbeFailed,      // the probe itself failed (unexpected exit status)
  kUnreachable,      // the node could not be reached
  // Set by apply:
  kApplied,  // changed, and the verification probe passed
  kFailed,   // change or verification failed
  kBlocked,  // not run because something it waits for did not finish
};

std::string ToString(ItemState state);
bool ParseItemState(const std::string& text, ItemState& state);

struct PlanItem {
  std::size_t id = 0;
  std::string node;
  std::string step;
  std::vector<std::size_t> after;   // items that must be done first
  std::vector<std::size_t> before;  // items waiting for this one
  StepEnv env;                      // the step's declared parameters
  std::string digest;               // of the step's scripts and env: what "this step" means here
  bool reboot = false;              // the step's change takes effect only after a reboot
  std::uint8_t restarts = 0;        // RestartBits (drain.h): runtimes the change restarts

  ItemState state = ItemState::kUnprobed;
  std::string observed;  // the probe's stdout, trimmed: what the node reported
  std::string detail;    // stderr or the reason for a failure
};

struct PlanSummary {
  std::size_t nodes = 0;
  std::size_t to_change = 0;
  std::size_t ok = 0;
  std::size_t known_after_apply = 0;
  std::size_t attention = 0;  // wrong, and apply cannot fix it
  std::size_t refused = 0;    // a change the node's repositories cannot make
  std::size_t errors = 0;     // probe failures and unreachable items
  std::size_t applied = 0;
  std::size_t failed = 0;
  std::size_t blocked = 0;
  // Nodes that a change still to make will reboot (plan marks them).
  std::vector<std::string> rebooting_nodes;

  [[nodiscard]] bool Pending() const { return to_change + known_after_apply > 0; }
  // "3 nodes: 14 to change, 6 ok"
  [[nodiscard]] std::string Line() const;
};

// Which steps a plan holds: what apply converges (every plan, apply and
// check), or that plus the deep validations (`check --deep`).
enum class PlanScope { kConverge, kDeepCheck };

class Plan {
 public:
  // The structure only (every item kUnprobed): items for every node in
  // inventory order, and on each node the applicable steps in dependency
  // order (catalog order among independent ones), so the result is
  // deterministic. A dependency on a step that does not apply to a node (a
  // GPU step on a storage node) is dropped: applicability is per node.
  static Plan Build(const Inventory& inventory, const Catalog& catalog,
                    PlanScope scope = PlanScope::kConverge);

  // A plan read back from a file: items carry their own edges ("after");
  // "before" and the index are rebuilt. Throws std::out_of_range on an edge
  // to an item that does not exist.
  static Plan FromItems(std::vector<std::string> nodes, std::vector<PlanItem> items);

  // The items `seed` marks (by id) and, transitively, every item they wait
  // for, on whatever node; the plan's nodes that keep an item or are in
  // `nodes`. Leaving nodes stay leaving (MarkUnreachable).
  [[nodiscard]] Plan KeepWithPrerequisites(const std::vector<bool>& seed,
                                           const std::set<std::string>& nodes) const;

  [[nodiscard]] const std::vector<PlanItem>& items() const { return items_; }
  [[nodiscard]] std::vector<PlanItem>& items() { return items_; }
  [[nodiscard]] PlanItem* Find(const std::string& node, const std::string& step);
  [[nodiscard]] const PlanItem* Find(const std::string& node, const std::string& step) const;
  // Item ids of one node, in the node's execution order (none for a node
  // the plan does not have).
  [[nodiscard]] const std::vector<std::size_t>& ItemsOf(const std::string& node) const;
  // Marks every item of a node that cannot be worked on (no connection, or
  // not the OS the inventory says) as unreachable, with the reason. A node
  // leaving the cluster (Node::absent) is left as it is instead: its items
  // count as done, with the reason observed, so the control plane still
  // forgets it (a dead server is removed this way).
  void MarkUnreachable(const std::string& node, const std::string& reason);
  // After probing: an item whose probe passed but whose verification failed
  // (kNeedsAttention) while something it waits for, on its node or another,
  // is still to change, is kKnownAfterApply instead: the verification may
  // only be failing for want of that change (a worker not joined yet, so
  // the GPU Operator cannot count its GPUs). apply probes it again once what
  // it waits for has run. Returns the ids of the items it moved.
  std::vector<std::size_t> DeferVerdictsOnPendingWork();
  [[nodiscard]] const std::vector<std::string>& nodes() const { return nodes_; }
  [[nodiscard]] PlanSummary Summarize() const;

 private:
  void Link();  // fills `before` and the indexes from `after`

  std::vector<PlanItem> items_;
  std::vector<std::string> nodes_;  // inventory order
  std::set<std::string> leaving_;   // nodes with state: absent (Build only)
  // node -> its items; a (node, step) lookup scans that node's few dozen
  // items, which beats a tree keyed by both names (one entry per item).
  std::unordered_map<std::string, std::vector<std::size_t>> by_node_;
};

}  // namespace gpuctl
