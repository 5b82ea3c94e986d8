// Drift: what changed on the nodes between a saved plan and now. A saved plan
// applies exactly or not at all: if any item's probe saw something else, or
// the steps themselves changed, apply refuses and names node and step.
#pragma once

#include <string>
#include <vector>

#include "gpuctl/plan.h"

namespace gpuctl {

// One line per difference, e.g.
// "worker1 gpu.nouveau-blacklist: was 'will change' (…), now 'ok'".
std::vector<std::string> CompareWithSaved(const Plan& saved, const Plan& now);

}  // namespace gpuctl
