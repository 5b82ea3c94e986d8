// CheckView: what `gpuctl check` found, as data, and that data shown to a
// person (text) or a program (JSON). The CLI computes the report and prints
// what these functions return, so tests can assert on the output without a
// cluster.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"

namespace gpuctl {

// A reachable node's item that does not hold.
struct CheckMismatch {
  std::string node;
  std::string step;
  ItemState state = ItemState::kNeedsChange;
  std::string message;  // what an admin acts on (one line)
};

// A deep validation's outcome, reported whether it passed or not.
struct CheckValidation {
  std::string node;
  std::string step;
  bool passed = false;
  std::string figures;
};

struct CheckReport {
  std::string cluster;
  std::size_t nodes = 0;    // in the inventory
  std::size_t checked = 0;  // items probed or accounted for
  std::size_t ok = 0;       // items that hold
  bool deep = false;        // --deep: the JSON carries "validations"
  std::vector<CheckMismatch> mismatches;
  std::vector<CheckValidation> validations;
  std::map<std::string, std::string> unreachable;  // node -> why

  bool Matches() const { return mismatches.empty() && unreachable.empty(); }
};

// Reads the probed plan: items of unreachable nodes are neither mismatches
// nor validations (the node's error says it once).
CheckReport MakeCheckReport(const Plan& plan, const Catalog& catalog, const Inventory& inventory,
                            const std::map<std::string, std::string>& node_errors, bool deep);

struct CheckTextOptions {
  bool hide_ok = false;   // leave out the deep validations that pass (-o json keeps them)
  std::size_t width = 0;  // cut lines to this many columns (util/terminal.h); 0: never
};

// Unreachable nodes, mismatches, deep validations, then the summary line.
// Nodes that say the same (their own name written <node>) are said once,
// under "gpu[01-18] (18 identical):" (fold.h); a node alone keeps the
// "node: message (step)" line.
std::string RenderCheckText(const CheckReport& report, const CheckTextOptions& options = {});

nlohmann::json CheckToJson(const CheckReport& report);

}  // namespace gpuctl
