#include "gpuctl/action/spec.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <ostream>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "gpuctl/model/node_range.h"
#include "gpuctl/model/yaml_source.h"
#include "gpuctl/util/digest.h"
#include "gpuctl/util/input_file.h"

namespace gpuctl {

std::optional<Spec> LoadSpec(const std::string& inventory_path, const SpecOptions& options,
                             std::ostream& err) {
  Diagnostics diagnostics;
  // Read once: the digest a saved plan records is of the bytes validated.
  const auto text = yaml::ReadFile(inventory_path, kMaxInventoryBytes, diagnostics);
  auto inventory =
      text ? ParseInventory(*text, inventory_path, diagnostics) : std::optional<Inventory>();
  auto catalog = Catalog::Load(options.playbooks.empty() ? DefaultPlaybookDir() : options.playbooks,
                               diagnostics);
  err << diagnostics.Format();
  if (!inventory || !catalog) {
    err << fmt::format("gpuctl: {} error(s); nothing was sent to any node\n",
                       diagnostics.ErrorCount());
    return std::nullopt;
  }
  if (!options.only.empty()) {
    std::string error;
    Catalog selected = catalog->Select(options.only, error);
    if (!error.empty()) {
      err << "gpuctl: " << error << "; nothing was sent to any node\n";
      return std::nullopt;
    }
    catalog = std::move(selected);
  }
  std::set<std::string> targets;
  if (!options.limit.empty() || !options.exclude.empty()) {
    std::vector<std::string> names;
    names.reserve(inventory->nodes.size());
    for (const auto& node : inventory->nodes) {
      names.push_back(node.name);
    }
    std::string error;
    auto selected = SelectNodes(names, options.limit, options.exclude, error);
    if (!selected) {
      err << "gpuctl: " << error << "; nothing was sent to any node\n";
      return std::nullopt;
    }
    if (selected->size() < names.size()) {
      targets = std::move(*selected);
      err << fmt::format(
          "gpuctl: limited to {} of {} nodes; others are only read where a "
          "limited node's step needs their state\n",
          targets.size(), names.size());
    }
  }
  std::set<std::string> reach = NodesReached(*inventory, *catalog, targets);
  return Spec{std::move(*inventory), std::move(*catalog), Digest(*text),
              std::move(targets),    std::move(reach),    {}};
}

std::set<std::string> NodesReached(const Inventory& inventory, const Catalog& catalog,
                                   const std::set<std::string>& targets) {
  std::set<std::string> reach;
  if (targets.empty()) {
    return reach;
  }
  const bool any_auto = std::any_of(inventory.nodes.begin(), inventory.nodes.end(),
                                    [](const Node& node) { return node.os.IsAuto(); });
  for (const OsFamily family : {OsFamily::kDebian, OsFamily::kRhel}) {
    Inventory guess = inventory;
    for (Node& node : guess.nodes) {
      if (node.os.IsAuto()) {
        node.os.family = family;
      }
    }
    const Plan limited = LimitPlan(Plan::Build(guess, catalog), targets);
    reach.insert(limited.nodes().begin(), limited.nodes().end());
    if (!any_auto) {
      break;  // every node's family is known: one plan says it all
    }
  }
  reach.insert(targets.begin(), targets.end());
  return reach;
}

Plan LimitPlan(const Plan& plan, const std::set<std::string>& targets) {
  if (targets.empty()) {
    return plan;
  }
  std::vector<bool> seed(plan.items().size(), false);
  for (const auto& item : plan.items()) {
    seed[item.id] = targets.count(item.node) > 0;
  }
  return plan.KeepWithPrerequisites(seed, targets);
}

std::vector<std::string> ChangesOutsideLimit(const Plan& plan,
                                             const std::set<std::string>& targets) {
  std::vector<std::string> out;
  if (targets.empty()) {
    return out;
  }
  for (const auto& item : plan.items()) {
    if (targets.count(item.node) > 0) {
      continue;
    }
    if (item.state == ItemState::kNeedsChange || item.state == ItemState::kKnownAfterApply ||
        item.state == ItemState::kUnprobed) {
      out.push_back(item.node + " " + item.step);
    }
  }
  return out;
}

std::string OutsideLimitRefusal(const Plan& plan, const std::set<std::string>& targets) {
  const auto outside = ChangesOutsideLimit(plan, targets);
  if (outside.empty()) {
    return "";
  }
  std::string message = fmt::format(
      "refusing: the limited nodes need {} change{} on node{} outside --limit/--exclude:",
      outside.size(), outside.size() == 1 ? "" : "s", outside.size() == 1 ? "" : "s");
  constexpr std::size_t kShown = 10;
  for (std::size_t i = 0; i < outside.size() && i < kShown; ++i) {
    message += (i == 0 ? " " : ", ") + outside[i];
  }
  if (outside.size() > kShown) {
    message += fmt::format(" and {} more", outside.size() - kShown);
  }
  message += "; widen --limit to include them, or run without it";
  return message;
}

namespace {

class ReachPhase : public Phase {
 public:
  explicit ReachPhase(const std::set<std::string>& reach) : reach_(reach) {}
  [[nodiscard]] std::string Title() const override { return "reach"; }
  void Run(RunContext& context) override {
    if (reach_.empty()) {
      return;
    }
    for (const Node& node : context.inventory.nodes) {
      if (reach_.count(node.name) == 0) {
        context.LeaveOut(node.name);
      }
    }
  }

 private:
  const std::set<std::string>& reach_;
};

class LimitPhase : public Phase {
 public:
  explicit LimitPhase(const std::set<std::string>& targets) : targets_(targets) {}
  [[nodiscard]] std::string Title() const override { return "limit"; }
  void Run(RunContext& context) override {
    if (!targets_.empty()) {
      context.plan = LimitPlan(context.plan, targets_);
    }
  }

 private:
  const std::set<std::string>& targets_;
};

class LimitRefusalPhase : public Phase {
 public:
  LimitRefusalPhase(const std::set<std::string>& targets, bool stop_all)
      : targets_(targets), stop_all_(stop_all) {}
  [[nodiscard]] std::string Title() const override { return "limit check"; }
  void Run(RunContext& context) override {
    const std::string refusal = OutsideLimitRefusal(context.plan, targets_);
    if (refusal.empty()) {
      return;
    }
    std::map<std::string, std::string> steps;  // node outside -> its items
    for (const auto& item : ChangesOutsideLimit(context.plan, targets_)) {
      const auto space = item.find(' ');
      std::string& list = steps[item.substr(0, space)];
      list += (list.empty() ? "" : ", ") + item.substr(space + 1);
    }
    for (const auto& [node, list] : steps) {
      context.FailNode(node, fmt::format("outside --limit/--exclude, but the limited nodes need "
                                         "{} changed here first; gpuctl refuses to change it "
                                         "(widen --limit to include {})",
                                         list, node));
    }
    if (stop_all_) {
      for (const auto& node : context.plan.nodes()) {
        context.plan.MarkUnreachable(node, refusal);
      }
    }
  }

 private:
  const std::set<std::string>& targets_;
  bool stop_all_;
};

}  // namespace

std::unique_ptr<Phase> MakeReachPhase(const std::set<std::string>& reach) {
  return std::make_unique<ReachPhase>(reach);
}

std::unique_ptr<Phase> MakeLimitPhase(const std::set<std::string>& targets) {
  return std::make_unique<LimitPhase>(targets);
}

std::unique_ptr<Phase> MakeLimitRefusalPhase(const std::set<std::string>& targets, bool stop_all) {
  return std::make_unique<LimitRefusalPhase>(targets, stop_all);
}

PlanHeader HeaderFor(const Spec& spec) {
  PlanHeader h;
  h.cluster = spec.inventory.cluster;
  // Absolute, so `gpuctl apply plan.json` works from any directory.
  h.inventory_path = std::filesystem::absolute(spec.inventory.path).string();
  h.inventory_digest = spec.inventory_digest;
  h.catalog_digest = spec.catalog.Digest();
  for (const auto& node : spec.inventory.nodes) {
    if (!node.os.IsAuto()) {  // an auto node the run could not identify records nothing
      h.node_os[node.name] = node.os.Name();
    }
  }
  h.created =
      fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                  std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  return h;
}

}  // namespace gpuctl
