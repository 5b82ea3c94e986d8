// gpuctl check: does the cluster still match the inventory? Probes only.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/inputs.h"

namespace gpuctl::cli {
namespace {

struct CheckOptions {
  std::string inventory;
  bool deep = false;
  ConnectOptions connect;
};

// What an admin acts on: the probe's own words, else what failed.
std::string Mismatch(const PlanItem& item, const Catalog& catalog) {
  if (!item.observed.empty()) {
    return item.observed.substr(0, item.observed.find('\n'));
  }
  if (!item.detail.empty()) {
    return item.detail;
  }
  const Step* step = catalog.Find(item.step);
  return "not in place: " + (step != nullptr ? step->description : item.step);
}

int RunCheck(const CheckOptions& options, const GlobalOptions& global) {
  auto inputs = LoadInputs(options.inventory, global, std::cerr);
  if (!inputs) {
    return kExitError;
  }
  Plan plan;  // built once every node's OS is known
  const auto errors =
      RunReadOnly(*inputs, plan, options.deep ? PlanScope::kDeepCheck : PlanScope::kConverge,
                  MakeCheckPhase(), options.connect, global);
  nlohmann::json mismatches = nlohmann::json::array();
  // Deep validations report their figures whether they pass or not.
  nlohmann::json validations = nlohmann::json::array();
  std::size_t matched = 0;
  for (const auto& item : plan.items()) {
    const Step* step = inputs->catalog.Find(item.step);
    if (step != nullptr && step->deep && errors.count(item.node) == 0) {
      validations.push_back({{"node", item.node},
                             {"step", item.step},
                             {"passed", item.state == ItemState::kSatisfied},
                             {"figures", Mismatch(item, inputs->catalog)}});
    }
    if (item.state == ItemState::kSatisfied) {
      ++matched;
    } else if (errors.count(item.node) == 0) {
      mismatches.push_back({{"node", item.node},
                            {"step", item.step},
                            {"state", ToString(item.state)},
                            {"message", Mismatch(item, inputs->catalog)}});
    }
  }
  if (global.output == "json") {
    nlohmann::json doc = {{"cluster", inputs->inventory.cluster},
                          {"matches", mismatches.empty() && errors.empty()},
                          {"checked", plan.items().size()},
                          {"ok", matched},
                          {"mismatches", mismatches},
                          {"unreachable", errors}};
    if (options.deep) {
      doc["validations"] = validations;
    }
    std::cout << doc.dump(2) << '\n';
  } else {
    for (const auto& [node, error] : errors) {
      std::cout << fmt::format("{}: unreachable: {}\n", node, error);
    }
    for (const auto& m : mismatches) {
      std::cout << fmt::format("{}: {} ({})\n", m["node"].get<std::string>(),
                               m["message"].get<std::string>(), m["step"].get<std::string>());
    }
    if (!validations.empty()) {
      std::cout << "\nDeep validation:\n";
      for (const auto& v : validations) {
        std::cout << fmt::format("  {} {}: {} ({})\n", v["passed"].get<bool>() ? "pass" : "FAIL",
                                 v["node"].get<std::string>(), v["figures"].get<std::string>(),
                                 v["step"].get<std::string>());
      }
    }
    std::cout << fmt::format(
        "\nCheck: {} nodes, {} of {} checks pass, {} mismatch{}, {} unreachable\n",
        inputs->inventory.nodes.size(), matched, plan.items().size(), mismatches.size(),
        mismatches.size() == 1 ? "" : "es", errors.size());
  }
  if (!errors.empty()) {
    return kExitError;
  }
  return mismatches.empty() ? kExitOk : kExitChanges;
}

}  // namespace

void SetCheckCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto options = std::make_shared<CheckOptions>();
  auto* cmd = app.add_subcommand(
      "check",
      "Probe every node (read-only) and list where the cluster no longer matches the inventory.\n"
      "Exit status: 0 matches, 2 mismatches found, 1 error (e.g. a node unreachable).");
  cmd->add_option("inventory", options->inventory, "Inventory YAML file")->required();
  cmd->add_flag("--deep", options->deep,
                "Also run the deep validations (a GPU pod, NCCL all_reduce_perf across nodes, "
                "ib_send_bw between node pairs) and report their figures");
  AddConnectOptions(*cmd, options->connect);
  cmd->callback([options, &global, &exit_code] { exit_code = RunCheck(*options, global); });
}

}  // namespace gpuctl::cli
