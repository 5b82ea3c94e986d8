// Drift: what changed on the nodes between a saved plan and now. A saved plan
// applies exactly or not at all: if any item's probe saw something else, or
// the steps themselves changed, apply refuses and names node and step.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"

namespace gpuctl {

// One line per difference, e.g.
// "worker1 gpu.nouveau-blacklist: was 'will change' (…), now 'ok'".
std::vector<std::string> CompareWithSaved(const Plan& saved, const Plan& now);

// One line per node whose OS differs from the one the saved plan recorded
// (node -> "rocky-9"), e.g. "worker2: the plan was made for rocky-9, the node
// now runs debian-12". Nodes not identified on either side are skipped: they
// failed, and say so themselves.
std::vector<std::string> CompareNodeOs(const std::map<std::string, std::string>& saved,
                                       const Inventory& now);

}  // namespace gpuctl
