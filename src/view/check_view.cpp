#include "gpuctl/view/check_view.h"

#include <fmt/format.h>

#include "gpuctl/util/terminal.h"
#include "gpuctl/util/utf8.h"
#include "gpuctl/view/fold.h"

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

std::string RenderCheckText(const CheckReport& report, const CheckTextOptions& options) {
  // One line per thing a node says; a folded group's lines go under its
  // label, a lone node's each start with its name.
  const auto said = [](const NodeFolder& folder, const std::string& indent) {
    std::string out;
    for (const NodeGroup& group : folder.groups()) {
      const std::string text = group.Shown();
      const bool alone = group.nodes.size() == 1;
      if (!alone) {
        out += fmt::format("{}{}:\n", indent, group.Label());
      }
      std::size_t start = 0;
      while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        const std::string line = text.substr(start, end - start);
        out += alone ? fmt::format("{}{}: {}\n", indent, group.nodes.front(), line)
                     : fmt::format("{}  {}\n", indent, line);
        start = end == std::string::npos ? text.size() : end + 1;
      }
    }
    return out;
  };
  NodeFolder unreachable;
  for (const auto& [node, error] : report.unreachable) {
    unreachable.Add(node, "unreachable: " + error + "\n");
  }
  // Mismatches come node by node (the plan's order).
  NodeFolder mismatches;
  for (std::size_t i = 0; i < report.mismatches.size();) {
    const std::string& node = report.mismatches[i].node;
    std::string lines;
    for (; i < report.mismatches.size() && report.mismatches[i].node == node; ++i) {
      const CheckMismatch& m = report.mismatches[i];
      lines += fmt::format("{} ({})\n", m.message, m.step);
    }
    mismatches.Add(node, lines);
  }
  std::string out = said(unreachable, "") + said(mismatches, "");
  NodeFolder validations;
  for (std::size_t i = 0; i < report.validations.size();) {
    const std::string& node = report.validations[i].node;
    std::string lines;
    for (; i < report.validations.size() && report.validations[i].node == node; ++i) {
      const CheckValidation& v = report.validations[i];
      if (!v.passed || !options.hide_ok) {
        lines += fmt::format("{} {} ({})\n", v.passed ? "pass" : "FAIL", v.figures, v.step);
      }
    }
    if (!lines.empty()) {
      validations.Add(node, lines);
    }
  }
  if (!validations.groups().empty()) {
    out += "\nDeep validation:\n";
    // "  pass worker1: busbw 180 GB/s (validate.nccl)": the verdict first.
    for (const NodeGroup& group : validations.groups()) {
      const std::string text = group.Shown();
      const std::string label = group.nodes.size() == 1 ? group.nodes.front() : group.Label();
      for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = text.find('\n', start);
        const std::string line = text.substr(start, end - start);
        const std::size_t space = line.find(' ');
        out += fmt::format("  {} {}: {}\n", line.substr(0, space), label, line.substr(space + 1));
        start = end == std::string::npos ? text.size() : end + 1;
      }
    }
  }
  const std::size_t count = report.mismatches.size();
  out += fmt::format("\nCheck: {} nodes, {} of {} checks pass, {} mismatch{}, {} unreachable\n",
                     report.nodes, report.ok, report.checked, count, count == 1 ? "" : "es",
                     report.unreachable.size());
  return FitLines(out, options.width);
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
