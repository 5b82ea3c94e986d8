#include "gpuctl/model/plan.h"

#include <algorithm>
#include <array>
#include <set>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "gpuctl/model/params.h"
#include "gpuctl/util/digest.h"

namespace gpuctl {
namespace {

constexpr std::array<std::pair<ItemState, const char*>, 11> kStateNames{{
    {ItemState::kUnprobed, "unprobed"},
    {ItemState::kSatisfied, "ok"},
    {ItemState::kNeedsChange, "change"},
    {ItemState::kKnownAfterApply, "known-after-apply"},
    {ItemState::kNeedsAttention, "attention"},
    {ItemState::kRefused, "refused"},
    {ItemState::kProbeFailed, "probe-failed"},
    {ItemState::kUnreachable, "unreachable"},
    {ItemState::kApplied, "applied"},
    {ItemState::kFailed, "failed"},
    {ItemState::kBlocked, "blocked"},
}};

// Steps that apply to `node`, ordered so each comes after its same-node
// dependencies (and those `on:` a role the node has); among independent steps, catalog order wins
// (a stable topological sort), which keeps plans identical from run to run. One exception: a step
// that reboots the node yields to a ready step other nodes wait for, so they do not wait through
// the reboot (the subnet manager's OpenSM starts before its node's driver reboot, and every other
// IB node's OFED goes on meanwhile).
//
// The order depends on a node only through which steps apply to it and
// which `unless` conditions hold there, so nodes alike (thousands of
// workers) share one: each shape is sorted once.
class StepOrders {
 public:
  StepOrders(const Inventory& inventory, const Catalog& catalog, PlanScope scope)
      : inventory_(inventory), catalog_(catalog), scope_(scope) {
    for (const auto& step : catalog.steps()) {
      for (const auto& d : step.depends) {
        if (d.on_role) {
          awaited_.insert(d.step);
        }
      }
    }
  }

  const std::vector<const Step*>& For(const Node& node) {
    // The shape: a mark per step (applies or not) and, for each dependency
    // with `unless` of a step that applies, whether the condition holds.
    std::string shape;
    std::vector<const Step*> applicable;
    for (const auto& step : catalog_.steps()) {
      const bool applies =
          !(step.deep && scope_ != PlanScope::kDeepCheck) && step.AppliesTo(node, inventory_);
      shape += applies ? '1' : '0';
      if (!applies) {
        continue;
      }
      applicable.push_back(&step);
      for (const auto& d : step.depends) {
        if (d.unless) {
          shape += ConditionHolds(*d.unless, node, inventory_) ? 'u' : '-';
        }
        if (d.on_role) {
          shape += OtherNodes(d, node) ? 'o' : 's';
        }
      }
    }
    auto [it, fresh] = orders_.try_emplace(std::move(shape));
    if (fresh) {
      it->second = Sort(node, std::move(applicable));
    }
    return it->second;
  }

 private:
  // A dependency `on:` a role this node lacks waits for other nodes only;
  // the scheduler orders it. On a node with that role (the master's own
  // os.time-sync waits for the master's os.firewall) it is also a
  // same-node dependency: the node's walker goes through its items in this
  // order, and would otherwise wait on an item it has yet to reach.
  static bool OtherNodes(const StepDependency& d, const Node& node) {
    return d.on_role.has_value() && !node.Has(*d.on_role);
  }

  std::vector<const Step*> Sort(const Node& node, std::vector<const Step*> applicable) const {
    std::vector<const Step*> ordered;
    std::vector<bool> placed(applicable.size(), false);
    auto is_placed = [&](const std::string& id) -> bool {
      for (std::size_t i = 0; i < applicable.size(); ++i) {
        if (applicable[i]->id == id) {
          return placed[i];
        }
      }
      return true;  // not applicable here: nothing to wait for
    };
    auto is_ready = [&](std::size_t i) {
      return !placed[i] &&
             std::all_of(applicable[i]->depends.begin(), applicable[i]->depends.end(),
                         [&](const StepDependency& d) {
                           return OtherNodes(d, node) || is_placed(d.step) ||
                                  (d.unless && ConditionHolds(*d.unless, node, inventory_));
                         });
    };
    while (ordered.size() < applicable.size()) {
      std::size_t next = applicable.size();
      for (std::size_t i = 0; i < applicable.size() && next == applicable.size(); ++i) {
        if (is_ready(i)) {
          next = i;  // the first ready one: catalog order is preferred
        }
      }
      // Not inside a run of reboot steps: those share one reboot.
      if (next < applicable.size() && applicable[next]->reboot &&
          (ordered.empty() || !ordered.back()->reboot)) {
        for (std::size_t i = next + 1; i < applicable.size(); ++i) {
          if (!applicable[i]->reboot && awaited_.count(applicable[i]->id) != 0 && is_ready(i)) {
            next = i;
            break;
          }
        }
      }
      if (next < applicable.size()) {
        placed[next] = true;
        ordered.push_back(applicable[next]);
      } else {
        // The catalog loader rejects cycles; keep the remaining ones in
        // catalog order rather than loop forever if a hand-built catalog has one.
        for (std::size_t i = 0; i < applicable.size(); ++i) {
          if (!placed[i]) {
            placed[i] = true;
            ordered.push_back(applicable[i]);
          }
        }
      }
    }
    return ordered;
  }

  const Inventory& inventory_;
  const Catalog& catalog_;
  PlanScope scope_;
  std::set<std::string> awaited_;  // steps some step on other nodes waits for (`on:`)
  std::unordered_map<std::string, std::vector<const Step*>> orders_;  // by shape
};

// What a step is wherever it runs: its scripts (with the prelude before
// them), inputs, secrets and reboot flag. Computed once per step, since a
// plan holds the same step for many nodes.
std::string StepDigest(const Step& step, const std::string& prelude) {
  std::string text = prelude + '\n' + step.id + '\n' + step.probe + '\n' + step.verify + '\n';
  for (const auto& [family, script] : step.change) {
    text += ToString(family) + ':' + script + '\n';
  }
  // What an input runs is part of the step; what it returns is not (a join
  // command differs on every run, and a secret must not shape a digest).
  for (const auto& input : step.inputs) {
    text += "input " + input.name + '@' + ToString(input.from) + ':' + input.script + '\n';
  }
  for (const auto& secret : step.secrets) {
    text += "secret " + secret + '\n';
  }
  text += step.reboot ? "reboot\n" : "";
  if (step.restarts != kRestartsNothing) {
    text += "restarts " + DescribeRestarts(step.restarts) + '\n';
  }
  return Digest(text);
}

// The step as it runs on one node: the step's digest and the node's values
// of its parameters. A long value (a cluster-wide list) counts by its own
// digest, computed once, so hashing a plan stays linear in its size.
std::string ItemDigest(const std::string& step_digest, const StepEnv& env) {
  std::string text = step_digest + '\n';
  for (const auto& [key, value] : env) {
    text += key;
    if (value.LongTextDigest().empty()) {
      text += '=' + value.str() + '\n';
    } else {
      text += '#' + value.LongTextDigest() + '\n';
    }
  }
  return Digest(text);
}

}  // namespace

std::string ToString(ItemState state) {
  for (const auto& [s, name] : kStateNames) {
    if (s == state) {
      return name;
    }
  }
  return "unknown";
}

bool ParseItemState(const std::string& text, ItemState& state) {
  for (const auto& [s, name] : kStateNames) {
    if (text == name) {
      state = s;
      return true;
    }
  }
  return false;
}

std::string PlanSummary::Line() const {
  std::string line =
      fmt::format("{} node{}: {} to change, {} ok", nodes, nodes == 1 ? "" : "s", to_change, ok);
  if (known_after_apply > 0) {
    line += fmt::format(", {} known after apply", known_after_apply);
  }
  if (attention > 0) {
    line += fmt::format(", {} apply cannot fix", attention);
  }
  if (refused > 0) {
    line += fmt::format(", {} refused", refused);
  }
  if (!rebooting_nodes.empty()) {
    line += fmt::format(", {} node{} to reboot", rebooting_nodes.size(),
                        rebooting_nodes.size() == 1 ? "" : "s");
  }
  if (applied > 0) {
    line += fmt::format(", {} applied", applied);
  }
  if (failed > 0) {
    line += fmt::format(", {} failed", failed);
  }
  if (blocked > 0) {
    line += fmt::format(", {} blocked", blocked);
  }
  if (errors > 0) {
    line += fmt::format(", {} error{}", errors, errors == 1 ? "" : "s");
  }
  return line;
}

Plan Plan::Build(const Inventory& inventory, const Catalog& catalog, PlanScope scope) {
  Plan plan;
  const ParameterTable parameters(inventory);
  std::unordered_map<const Step*, std::string> step_digests;
  for (const auto& step : catalog.steps()) {
    step_digests.emplace(&step, StepDigest(step, catalog.prelude()));
  }
  // Each node's steps first, so the items are laid out once (a growing
  // vector of 300,000 items moved each of them twice or more).
  StepOrders orders(inventory, catalog, scope);
  std::vector<const std::vector<const Step*>*> node_steps;
  std::size_t count = 0;
  for (const auto& node : inventory.nodes) {
    node_steps.push_back(&orders.For(node));
    count += node_steps.back()->size();
  }
  plan.items_.reserve(count);
  // Each item's node, for the dependencies that depend on it (`unless`).
  std::vector<const Node*> item_nodes;
  item_nodes.reserve(count);
  for (std::size_t n = 0; n < inventory.nodes.size(); ++n) {
    const Node& node = inventory.nodes[n];
    plan.nodes_.push_back(node.name);
    if (node.absent) {
      plan.leaving_.insert(node.name);
    }
    const NodeParameters values = parameters.For(node);
    // The prelude's helpers pick apt or dnf by this, whatever the step declares.
    const SharedText os_family(ToString(node.os.family));
    for (const Step* step : *node_steps[n]) {
      PlanItem item;
      item.id = plan.items_.size();
      item.node = node.name;
      item.step = step->id;
      item.env = values.Environment(step->params);
      item.env.merge(values.Environment(step->change_params));
      item.env.insert_or_assign("GPUCTL_OS_FAMILY", os_family);
      item.digest = ItemDigest(step_digests.at(step), item.env);
      item.reboot = step->reboot;
      item.restarts = step->restarts;
      plan.items_.push_back(std::move(item));
      item_nodes.push_back(&node);
    }
  }
  // Edges after every item exists, since cross-node ones point anywhere.
  plan.Link();
  // Who holds each role, once: a step that waits for a role's holders is on
  // every node, and asking the inventory each time made planning quadratic.
  std::map<Role, std::vector<const Node*>> holders;
  for (auto& item : plan.items_) {
    const Step* step = catalog.Find(item.step);
    for (const auto& dep : step->depends) {
      if (dep.unless && ConditionHolds(*dep.unless, *item_nodes[item.id], inventory)) {
        continue;
      }
      if (!dep.on_role) {
        if (const PlanItem* other = plan.Find(item.node, dep.step)) {
          item.after.push_back(other->id);
        }
        continue;
      }
      auto [held, fresh] = holders.try_emplace(*dep.on_role);
      if (fresh) {
        // Leaving nodes too, unlike WithRole: slurm.config waits for a
        // leaving worker's slurmd to stop (its removal steps are its only
        // items, so no other step finds one of its items there).
        for (const Node& holder : inventory.nodes) {
          if (holder.Has(*dep.on_role)) {
            held->second.push_back(&holder);
          }
        }
      }
      for (const Node* holder : held->second) {
        if (const PlanItem* other = plan.Find(holder->name, dep.step);
            other != nullptr && other->id != item.id) {
          item.after.push_back(other->id);
        }
      }
    }
    std::sort(item.after.begin(), item.after.end());
    item.after.erase(std::unique(item.after.begin(), item.after.end()), item.after.end());
  }
  plan.Link();
  return plan;
}

Plan Plan::FromItems(std::vector<std::string> nodes, std::vector<PlanItem> items) {
  Plan plan;
  plan.nodes_ = std::move(nodes);
  plan.items_ = std::move(items);
  plan.Link();
  return plan;
}

Plan Plan::KeepWithPrerequisites(const std::vector<bool>& seed,
                                 const std::set<std::string>& nodes) const {
  std::vector<bool> keep(items_.size(), false);
  std::vector<std::size_t> todo;
  for (const auto& item : items_) {
    if (item.id < seed.size() && seed[item.id]) {
      todo.push_back(item.id);
    }
  }
  while (!todo.empty()) {
    const std::size_t id = todo.back();
    todo.pop_back();
    if (keep[id]) {
      continue;
    }
    keep[id] = true;
    for (const std::size_t dep : items_[id].after) {
      todo.push_back(dep);
    }
  }
  Plan out;
  std::vector<std::size_t> new_id(items_.size(), 0);
  for (const auto& item : items_) {
    if (keep[item.id]) {
      new_id[item.id] = out.items_.size();
      out.items_.push_back(item);
      out.items_.back().id = new_id[item.id];
    }
  }
  for (auto& item : out.items_) {
    for (auto& dep : item.after) {
      dep = new_id[dep];  // every prerequisite of a kept item is kept
    }
  }
  for (const auto& node : nodes_) {
    bool any = nodes.count(node) > 0;
    for (const std::size_t id : ItemsOf(node)) {
      any = any || keep[id];
    }
    if (any) {
      out.nodes_.push_back(node);
      if (leaving_.count(node) > 0) {
        out.leaving_.insert(node);
      }
    }
  }
  out.Link();
  return out;
}

void Plan::Link() {
  by_node_.clear();
  for (auto& item : items_) {
    item.before.clear();
    by_node_[item.node].push_back(item.id);
  }
  for (const auto& item : items_) {
    for (const std::size_t dep : item.after) {
      items_.at(dep).before.push_back(item.id);
    }
  }
}

PlanItem* Plan::Find(const std::string& node, const std::string& step) {
  return const_cast<PlanItem*>(std::as_const(*this).Find(node, step));
}

const PlanItem* Plan::Find(const std::string& node, const std::string& step) const {
  for (const std::size_t id : ItemsOf(node)) {
    if (items_[id].step == step) {
      return &items_[id];
    }
  }
  return nullptr;
}

void Plan::MarkUnreachable(const std::string& node, const std::string& reason) {
  const bool leaving = leaving_.count(node) > 0;
  for (const std::size_t id : ItemsOf(node)) {
    if (leaving) {
      // Nothing can be undone there; what the rest of the cluster does to
      // forget the node (k8s.forget-nodes, slurm.config) need not wait.
      items_[id].state = ItemState::kSatisfied;
      items_[id].observed =
          "not worked on, so left as it is (it is leaving the cluster): " + reason;
      continue;
    }
    items_[id].state = ItemState::kUnreachable;
    items_[id].detail = reason;
  }
}

const std::vector<std::size_t>& Plan::ItemsOf(const std::string& node) const {
  static const std::vector<std::size_t> kNone;
  auto it = by_node_.find(node);
  return it == by_node_.end() ? kNone : it->second;
}

std::vector<std::size_t> Plan::DeferVerdictsOnPendingWork() {
  // For each item, the first item still to change among what it waits for,
  // transitively (kNoItem: none). Items are visited from their
  // predecessors; a plan's edges form a DAG (Catalog rejects cycles).
  constexpr std::size_t kNoItem = static_cast<std::size_t>(-1);
  constexpr std::size_t kUnknown = kNoItem - 1;
  std::vector<std::size_t> pending_before(items_.size(), kUnknown);
  const auto is_pending = [](const PlanItem& item) {
    return item.state == ItemState::kNeedsChange || item.state == ItemState::kKnownAfterApply;
  };
  // Iterative: a chain of cross-node edges may be long on a large cluster.
  const auto resolve = [&](std::size_t start) {
    std::vector<std::pair<std::size_t, std::size_t>> stack = {{start, 0}};
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const PlanItem& item = items_[id];
      if (pending_before[id] == kUnknown) {
        pending_before[id] = kNoItem;  // until a predecessor says otherwise
      }
      bool descended = false;
      while (next < item.after.size() && pending_before[id] == kNoItem) {
        const std::size_t dep = item.after[next++];
        if (is_pending(items_[dep])) {
          pending_before[id] = dep;
        } else if (pending_before[dep] == kUnknown) {
          --next;  // look at it again once resolved
          stack.emplace_back(dep, 0);
          descended = true;
          break;
        } else if (pending_before[dep] != kNoItem) {
          pending_before[id] = pending_before[dep];
        }
      }
      if (!descended) {
        stack.pop_back();
      }
    }
  };
  std::vector<std::size_t> moved;
  for (auto& item : items_) {
    if (item.state != ItemState::kNeedsAttention) {
      continue;
    }
    if (pending_before[item.id] == kUnknown) {
      resolve(item.id);
    }
    const std::size_t waits_for = pending_before[item.id];
    if (waits_for == kNoItem) {
      continue;
    }
    const PlanItem& first = items_[waits_for];
    item.state = ItemState::kKnownAfterApply;
    item.observed = fmt::format("after {} on {}: {}", first.step, first.node, item.observed);
    moved.push_back(item.id);
  }
  return moved;
}

PlanSummary Plan::Summarize() const {
  PlanSummary s;
  s.nodes = nodes_.size();
  for (const auto& item : items_) {
    const bool pending =
        item.state == ItemState::kNeedsChange || item.state == ItemState::kKnownAfterApply;
    if (pending && item.reboot &&
        (s.rebooting_nodes.empty() || s.rebooting_nodes.back() != item.node)) {
      s.rebooting_nodes.push_back(item.node);  // items are grouped by node
    }
    switch (item.state) {
      case ItemState::kSatisfied:
        ++s.ok;
        break;
      case ItemState::kNeedsChange:
        ++s.to_change;
        break;
      case ItemState::kKnownAfterApply:
        ++s.known_after_apply;
        break;
      case ItemState::kNeedsAttention:
        ++s.attention;
        break;
      case ItemState::kRefused:
        ++s.refused;
        break;
      case ItemState::kProbeFailed:
      case ItemState::kUnreachable:
        ++s.errors;
        break;
      case ItemState::kApplied:
        ++s.applied;
        break;
      case ItemState::kFailed:
        ++s.failed;
        break;
      case ItemState::kBlocked:
        ++s.blocked;
        break;
      case ItemState::kUnprobed:
        break;
    }
  }
  return s;
}

}  // namespace gpuctl
