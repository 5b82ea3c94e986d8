// Checks that need every playbook at once: unique ids, dependencies that name
// a real step able to satisfy them, and no cycles (a cycle would deadlock
// apply, with each step waiting on the next).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "catalog_internal.h"

namespace gpuctl {

namespace {

std::string Place(const SourceLocation& where) {
  return fmt::format("{}:{}:{}", where.file, where.line, where.column);
}

class CycleFinder {
 public:
  CycleFinder(const std::vector<Step>& steps, const std::map<std::string, std::size_t>& index,
              Diagnostics& diagnostics)
      : steps_(steps), index_(index), diagnostics_(diagnostics), state_(steps.size(), kNew) {}

  void Run() {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      if (state_[i] == kNew) {
        Visit(i);
      }
    }
  }

 private:
  enum State { kNew, kOnPath, kDone };

  void Visit(std::size_t i) {
    state_[i] = kOnPath;
    path_.push_back(i);
    for (const auto& dep : steps_[i].depends) {
      auto it = index_.find(dep.step);
      if (it == index_.end()) {
        continue;
      }
      const std::size_t next = it->second;
      if (BrokenWhereTargetRuns(dep, steps_[next])) {
        continue;
      }
      if (state_[next] == kOnPath) {
        Report(next);
      } else if (state_[next] == kNew) {
        Visit(next);
      }
    }
    path_.pop_back();
    state_[i] = kDone;
  }

  // A dependency `unless` a condition the target step itself requires: the
  // target runs only on nodes where the condition holds, and there the
  // dependency is dropped, so no wait through it can come back to the
  // dependent step on the same node. (ib.ofed waits for ib.subnet-manager,
  // unless subnet_manager; ib.subnet-manager, when subnet_manager, waits for
  // that node's ib.ofed.)
  static bool BrokenWhereTargetRuns(const StepDependency& dep, const Step& target) {
    return dep.unless &&
           std::find(target.when.begin(), target.when.end(), *dep.unless) != target.when.end();
  }

  // The path from `start` to the current step, closed back to `start`.
  void Report(std::size_t start) {
    std::string cycle;
    bool in_cycle = false;
    for (std::size_t i : path_) {
      in_cycle = in_cycle || i == start;
      if (in_cycle) {
        cycle += steps_[i].id + " -> ";
      }
    }
    cycle += steps_[start].id;
    diagnostics_.Error(steps_[start].where, fmt::format("dependency cycle: {}", cycle));
  }

  const std::vector<Step>& steps_;
  const std::map<std::string, std::size_t>& index_;
  Diagnostics& diagnostics_;
  std::vector<State> state_;
  std::vector<std::size_t> path_;
};

}  // namespace

void Catalog::CheckGraph(const std::vector<Step>& steps, Diagnostics& diagnostics) {
  std::map<std::string, std::size_t> index;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].id.empty()) {
      continue;  // already reported as missing
    }
    auto [it, fresh] = index.emplace(steps[i].id, i);
    if (!fresh) {
      diagnostics.Error(steps[i].where, fmt::format("duplicate step id '{}' (first defined at {})",
                                                    steps[i].id, Place(steps[it->second].where)));
    } else {
      ids.push_back(steps[i].id);
    }
  }
  for (const auto& step : steps) {
    for (const auto& dep : step.depends) {
      auto it = index.find(dep.step);
      if (it == index.end()) {
        diagnostics.Error(dep.where, fmt::format("unknown step '{}' in depends{}", dep.step,
                                                 yaml::DidYouMean(dep.step, ids)));
        continue;
      }
      const Step& target = steps[it->second];
      if (dep.on_role && target.roles.count(*dep.on_role) == 0) {
        // No node of that role would ever run it, so the wait could never end.
        diagnostics.Error(dep.where, fmt::format("step '{}' never runs on {} nodes, so this "
                                                 "dependency can never be met",
                                                 dep.step, ToString(*dep.on_role)));
      }
    }
  }
  CycleFinder(steps, index, diagnostics).Run();
}

}  // namespace gpuctl
