#include "gpuctl/view/check_view.h"

#include <fmt/format.h>

#include "gpuctl/util/utf8.h"

namespace gpuctl {
namespace {

// What an admin acts on: the probe's own words, else what failed.
std::string Message(const PlanItem& item, const Catalog& catalog) {
  if (!item.observed.empty()) {
    return item.observed.substr(0, item.observed.find('\n'));
  }
  if (!item.detail.empty()) {
    return item.detail;
  }
  const Step* step = catalog.Find(item.step);
  return "not in place: " + (step != nullptr ? step->description : item.step);
}

}  // namespace

CheckReport MakeCheckReport(const Plan& plan, const Catalog& catalog, const Inventory& inventory,
                            const std::map<std::string, std::string>& node_errors, bool deep) {
  CheckReport report;
  report.cluster = inventory.cluster;
  report.nodes = inventory.nodes.size();
  report.checked = plan.items().size();
  report.deep = deep;
  report.unreachable = node_errors;
  for (const auto& item : plan.items()) {
    const bool reachable = node_errors.count(item.node) == 0;
    const Step* step = catalog.Find(item.step);
    if (step != nullptr && step->deep && reachable) {
      report.validations.push_back(
          {item.node, item.step, item.state == ItemState::kSatisfied, Message(item, catalog)});
    }
    if (item.state == ItemState::kSatisfied) {
      ++report.ok;
    } else if (reachable) {
      report.mismatches.push_back({item.node, item.step, item.state, Message(item, catalog)});
    }
  }
  return report;
}

std::string RenderCheckText(const CheckReport& report) {
  std::string out;
  for (const auto& [node, error] : report.unreachable) {
    out += fmt::format("{}: unreachable: {}\n", node, error);
  }
  for (const auto& m : report.mismatches) {
    out += fmt::format("{}: {} ({})\n", m.node, m.message, m.step);
  }
  if (!report.validations.empty()) {
    out += "\nDeep validation:\n";
    for (const auto& v : report.validations) {
      out +=
          fmt::format("  {} {}: {} ({})\n", v.passed ? "pass" : "FAIL", v.node, v.figures, v.step);
    }
  }
  const std::size_t count = report.mismatches.size();
  out += fmt::format("\nCheck: {} nodes, {} of {} checks pass, {} mismatch{}, {} unreachable\n",
                     report.nodes, report.ok, report.checked, count, count == 1 ? "" : "es",
                     report.unreachable.size());
  return out;
}

nlohmann::json CheckToJson(const CheckReport& report) {
  // What a node printed need not be UTF-8, which JSON must be (dump throws):
  // its bytes are shown as plan_view shows them.
  nlohmann::json mismatches = nlohmann::json::array();
  for (const auto& m : report.mismatches) {
    mismatches.push_back({{"node", m.node},
                          {"step", m.step},
                          {"state", ToString(m.state)},
                          {"message", ValidUtf8(m.message)}});
  }
  nlohmann::json unreachable = nlohmann::json::object();
  for (const auto& [node, why] : report.unreachable) {
    unreachable[node] = ValidUtf8(why);
  }
  nlohmann::json doc = {
      {"format", "gpuctl.check/v1"}, {"cluster", report.cluster}, {"matches", report.Matches()},
      {"checked", report.checked},   {"ok", report.ok},           {"mismatches", mismatches},
      {"unreachable", unreachable}};
  if (report.deep) {
    nlohmann::json validations = nlohmann::json::array();
    for (const auto& v : report.validations) {
      validations.push_back({{"node", v.node},
                             {"step", v.step},
                             {"passed", v.passed},
                             {"figures", ValidUtf8(v.figures)}});
    }
    doc["validations"] = validations;
  }
  return doc;
}

}  // namespace gpuctl
