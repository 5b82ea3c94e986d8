// The read-only actions, plan and check: connect to every node, read its OS,
// build the plan, then probe each item (plan) or verify it (check). Nothing
// on a node changes; the caller renders the result with a view.
#pragma once

#include <map>
#include <string>

#include "gpuctl/action/spec.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/run/reporter.h"
#include "gpuctl/run/run_context.h"
#include "gpuctl/transport/transport.h"

namespace gpuctl {

struct ReadOnlyResult {
  Plan plan;
  std::map<std::string, std::string> node_errors;  // node -> why it was not worked on
};

// `gpuctl plan`: what apply would change. Resolves `os: auto` nodes in
// spec.inventory to what each node runs.
ReadOnlyResult PlanAction(Spec& spec, Transport& transport, Reporter& progress,
                          const RunOptions& options);

// `gpuctl check [--deep]`: does the cluster still match; `deep` adds the
// validations (a GPU pod, NCCL across nodes, IB pairs).
ReadOnlyResult CheckAction(Spec& spec, Transport& transport, Reporter& progress,
                           const RunOptions& options, bool deep);

}  // namespace gpuctl
