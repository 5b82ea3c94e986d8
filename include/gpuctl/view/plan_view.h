// PlanView: the plan shown to a person (text) or a program (JSON). plan,
// apply and check all print through here so the three never disagree.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"

namespace gpuctl {

// Identifies the inputs a plan was computed from, so a saved plan can refuse
// to apply to anything else.
struct PlanHeader {
  std::string cluster;
  std::string inventory_path;
  std::string inventory_digest;
  std::string catalog_digest;
  std::string created;  // ISO 8601 UTC
  // Node -> the OS the plan was built for ("rocky-9"), as identified at
  // connect: `apply plan.json` refuses a node that runs another one now.
  std::map<std::string, std::string> node_os;
};

struct TextOptions {
  bool color = false;
  bool show_ok = true;  // list satisfied items too, not only changes
  // Only what went wrong (failed, blocked, errors, what apply cannot fix),
  // and only the nodes that have some: the end of an apply.
  bool problems_only = false;
  std::size_t width = 0;  // cut lines to this many columns (util/terminal.h); 0: never
  bool summary = true;    // end with the "Plan: ..." line
};

// After `plan --out PATH`: where the plan went and how to apply exactly it.
std::string SavedPlanNotice(const std::string& path);

// Node by node: "~" will change, "=" already satisfied, "?" known after apply,
// "!" error; then the summary line. Nodes whose lines are the same (their
// own name written <node>), OS and roles are shown once, under
// "gpu[01-18] (18 identical)" (fold.h).
void WritePlanText(std::ostream& out, const Plan& plan, const Inventory& inventory,
                   const std::map<std::string, std::string>& node_errors,
                   const TextOptions& options);
// Below a plan with refused items (the preflight): what apply will do about
// them, which is to change nothing anywhere.
std::string RefusalNotice(std::size_t refused);

// The same as WritePlanText, as one string (tests, small plans).
std::string RenderPlanText(const Plan& plan, const Inventory& inventory,
                           const std::map<std::string, std::string>& node_errors,
                           const TextOptions& options);

// The plan as JSON (format gpuctl.plan/v2), streamed to `out` an item a line.
void WritePlanJson(std::ostream& out, const Plan& plan, const PlanHeader& header,
                   const std::map<std::string, std::string>& node_errors);
// The same document, parsed (tests, small plans).
nlohmann::json PlanToJson(const Plan& plan, const PlanHeader& header,
                          const std::map<std::string, std::string>& node_errors);

// Reads back what PlanToJson wrote. Throws LoadError (naming the file) when
// the document is not a gpuctl plan of a known format version.
struct SavedPlan {
  PlanHeader header;
  Plan plan;
};
SavedPlan PlanFromJson(const nlohmann::json& document, const std::string& path);

// v2: long env values are written once, under "shared_values".
inline constexpr const char* kPlanFormat = "gpuctl.plan/v2";

}  // namespace gpuctl
