// Spec: what the cluster should be — the inventory and the step catalog, both
// validated — read before any node is contacted. Every command that works on
// nodes starts from one, and a saved plan records its digests.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/view/plan_view.h"

namespace gpuctl {

struct Spec {
  Inventory inventory;
  Catalog catalog;
  std::string inventory_digest;  // of the file's bytes, as validated
};

struct SpecOptions {
  std::string playbooks;          // catalog directory; empty: the installed one
  std::vector<std::string> only;  // --only: these steps and what they need; empty: all
};

// Reads and validates both, printing every diagnostic (errors and warnings)
// to `err`. Returns nullopt when either has an error, after saying that
// nothing was sent to any node.
std::optional<Spec> LoadSpec(const std::string& inventory_path, const SpecOptions& options,
                             std::ostream& err);

// The header of a plan of `spec`; call it after the run resolved each node's
// OS (the plan phase), which the header records.
PlanHeader HeaderFor(const Spec& spec);

}  // namespace gpuctl
