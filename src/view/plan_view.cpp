#include "gpuctl/view/plan_view.h"

#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "gpuctl/util/json_line.h"
#include "gpuctl/util/terminal.h"
#include "gpuctl/util/utf8.h"
#include "gpuctl/util/version.h"
#include "gpuctl/view/fold.h"

namespace gpuctl {
namespace {

struct Marker {
  const char* symbol;
  const char* color;  // ANSI SGR
  const char* words;
};

Marker MarkerFor(ItemState state) {
  switch (state) {
    case ItemState::kSatisfied:
      return {"=", "2", "ok"};
    case ItemState::kNeedsChange:
      return {"~", "33", "will change"};
    case ItemState::kKnownAfterApply:
      return {"?", "36", "known after apply"};
    case ItemState::kNeedsAttention:
      return {"!", "33", "apply cannot fix"};
    case ItemState::kRefused:
      return {"x", "31", "refused"};
    case ItemState::kApplied:
      return {"+", "32", "applied"};
    case ItemState::kBlocked:
      return {"-", "35", "blocked"};
    case ItemState::kUnprobed:
      return {" ", "0", "not probed"};
    case ItemState::kProbeFailed:
    case ItemState::kUnreachable:
    case ItemState::kFailed:
      break;
  }
  return {"!", "31", state == ItemState::kFailed ? "failed" : "error"};
}

std::string Roles(const Node& node) {
  std::string out;
  for (Role r : node.roles) {
    if (!out.empty()) {
      out += ',';
    }
    out += ToString(r);
  }
  return out;
}

// What the end of an apply lists: what did not go as planned.
bool Problem(ItemState state) {
  switch (state) {
    case ItemState::kNeedsAttention:
    case ItemState::kRefused:
    case ItemState::kProbeFailed:
    case ItemState::kUnreachable:
    case ItemState::kFailed:
    case ItemState::kBlocked:
      return true;
    default:
      return false;
  }
}

// First line only: the full text is in -v output and the JSON.
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

void WritePlanText(std::ostream& stream, const Plan& plan, const Inventory& inventory,
                   const std::map<std::string, std::string>& node_errors,
                   const TextOptions& options) {
  auto paint = [&](const char* color, const std::string& text) {
    return options.color ? fmt::format("\x1b[{}m{}\x1b[0m", color, text) : text;
  };
  // A node's lines below its header. Nodes whose lines are the same once
  // their own name is written <node>, on the same OS with the same roles,
  // are shown once under "worker[01-18] (18 identical)", wherever they stand
  // in the inventory.
  const auto body_of = [&](const Node& node) {
    std::string body;
    if (auto it = node_errors.find(node.name); it != node_errors.end()) {
      body += fmt::format("  {} {}\n", paint("31", "!"), FirstLine(it->second));
    }
    for (const std::size_t id : plan.ItemsOf(node.name)) {
      const PlanItem& item = plan.items()[id];
      if (item.state == ItemState::kUnreachable && node_errors.count(node.name) > 0) {
        continue;  // already said once for the node
      }
      if (item.state == ItemState::kSatisfied && !options.show_ok) {
        continue;
      }
      if (options.problems_only && !Problem(item.state)) {
        continue;
      }
      const Marker m = MarkerFor(item.state);
      std::string why = item.detail.empty() ? FirstLine(item.observed) : FirstLine(item.detail);
      if (item.state == ItemState::kSatisfied) {
        why.clear();  // "ok" says it; the observation is noise here
      }
      // A reboot is never a surprise: every change that brings one says so.
      const bool pending =
          item.state == ItemState::kNeedsChange || item.state == ItemState::kKnownAfterApply;
      std::string reboots = pending && item.reboot ? paint("1;33", " [reboots]") : "";
      if (pending && item.restarts != kRestartsNothing) {
        reboots += paint("1;33", fmt::format(" [restarts {}]", DescribeRestarts(item.restarts)));
      }
      body += fmt::format("  {} {:<30} {}{}{}\n", paint(m.color, m.symbol), item.step, m.words,
                          reboots, why.empty() ? "" : ": " + why);
    }
    return body;
  };
  NodeFolder folder;
  std::map<std::string, const Node*> by_name;
  for (const auto& node : inventory.nodes) {
    std::string body = body_of(node);
    if (options.problems_only && body.empty()) {
      continue;
    }
    folder.Add(node.name, body, node.os.Name() + ' ' + Roles(node));
    by_name[node.name] = &node;
  }
  for (const NodeGroup& group : folder.groups()) {
    const Node& first = *by_name.at(group.nodes.front());
    const std::string header = group.nodes.size() == 1
                                   ? fmt::format("{}  {}  {}  [{}]\n", paint("1", first.name),
                                                 first.address, first.os.Name(), Roles(first))
                                   : fmt::format("{}  {}  [{}]\n", paint("1", group.Label()),
                                                 first.os.Name(), Roles(first));
    stream << FitLines(header + group.Shown(), options.width);
  }
  if (options.summary) {
    const PlanSummary summary = plan.Summarize();
    stream << FitLines("\nPlan: " + summary.Line() + "\n", options.width);
    if (summary.refused > 0) {
      stream << RefusalNotice(summary.refused);
    }
  }
}

std::string RefusalNotice(std::size_t refused) {
  return fmt::format(
      "\n{} change{} cannot succeed as the inventory asks (marked x above): apply refuses to "
      "start until the inventory or the node's repositories are fixed, or the node is left "
      "out (--exclude); nothing is changed on any node.\n",
      refused, refused == 1 ? "" : "s");
}

std::string RenderPlanText(const Plan& plan, const Inventory& inventory,
                           const std::map<std::string, std::string>& node_errors,
                           const TextOptions& options) {
  std::ostringstream text;
  WritePlanText(text, plan, inventory, node_errors, options);
  return text.str();
}

void WritePlanJson(std::ostream& out, const Plan& plan, const PlanHeader& header,
                   const std::map<std::string, std::string>& node_errors) {
  nlohmann::json head;
  head["format"] = kPlanFormat;
  head["gpuctl_version"] = kVersion;
  head["created"] = header.created;
  head["cluster"] = header.cluster;
  head["inventory"] = {{"path", header.inventory_path}, {"digest", header.inventory_digest}};
  head["catalog_digest"] = header.catalog_digest;
  const PlanSummary s = plan.Summarize();
  head["summary"] = {{"nodes", s.nodes},
                     {"to_change", s.to_change},
                     {"ok", s.ok},
                     {"known_after_apply", s.known_after_apply},
                     {"attention", s.attention},
                     {"refused", s.refused},
                     {"errors", s.errors},
                     {"applied", s.applied},
                     {"failed", s.failed},
                     {"blocked", s.blocked},
                     {"reboot_nodes", s.rebooting_nodes},
                     {"line", s.Line()}};
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& name : plan.nodes()) {
    nlohmann::json n = {{"name", name}};
    if (auto it = header.node_os.find(name); it != header.node_os.end()) {
      n["os"] = it->second;
    }
    if (auto it = node_errors.find(name); it != node_errors.end()) {
      n["error"] = ValidUtf8(it->second);
    }
    nodes.push_back(n);
  }
  head["nodes"] = nodes;
  // A long value (every node's hosts line) is written once, under its
  // digest, and items name it: written into each item, it made a plan file
  // grow with the square of the cluster.
  nlohmann::json shared = nlohmann::json::object();
  for (const auto& item : plan.items()) {
    for (const auto& [name, value] : item.env) {
      if (!value.LongTextDigest().empty() && !shared.contains(value.LongTextDigest())) {
        shared[value.LongTextDigest()] = value.str();
      }
    }
  }
  head["shared_values"] = shared;
  // The head, then one item a line, streamed: the document is never held
  // whole, however many items the plan has.
  std::string text = head.dump(2);
  text.pop_back();  // the closing brace; items follow
  out << text << ",\n  \"items\": [";
  bool first = true;
  for (const auto& item : plan.items()) {
    // Written field by field (json_line.h): an nlohmann object per item
    // was most of the time a 10,000-node plan took to write.
    JsonLine env;
    JsonLine env_shared;
    for (const auto& [name, value] : item.env) {
      if (value.LongTextDigest().empty()) {
        env.Text(name, value.str());
      } else {
        env_shared.Text(name, value.LongTextDigest());
      }
    }
    std::string after = "[";
    for (const std::size_t id : item.after) {
      after += (after.size() > 1 ? "," : "") + std::to_string(id);
    }
    after += ']';
    std::string restarts = "[";
    for (std::size_t bit = 0; bit < RestartNames().size(); ++bit) {
      if ((item.restarts & (1U << bit)) != 0) {
        restarts += fmt::format("{}\"{}\"", restarts.size() > 1 ? "," : "", RestartNames()[bit]);
      }
    }
    restarts += ']';
    // What nodes printed may be any bytes; JSON carries only UTF-8.
    const std::string line = JsonLine()
                                 .Number("id", static_cast<long long>(item.id))
                                 .Text("node", item.node)
                                 .Text("step", item.step)
                                 .Text("state", ToString(item.state))
                                 .Text("observed", ValidUtf8(item.observed))
                                 .Text("detail", ValidUtf8(item.detail))
                                 .Text("digest", item.digest)
                                 .Flag("reboot", item.reboot)
                                 .Raw("restarts", restarts)
                                 .Raw("after", after)
                                 .Raw("env", env.str())
                                 .Raw("env_shared", env_shared.str())
                                 .str();
    out << (first ? "\n    " : ",\n    ") << line;
    first = false;
  }
  out << "\n  ]\n}\n";
}

nlohmann::json PlanToJson(const Plan& plan, const PlanHeader& header,
                          const std::map<std::string, std::string>& node_errors) {
  std::ostringstream text;
  WritePlanJson(text, plan, header, node_errors);
  return nlohmann::json::parse(text.str());
}

SavedPlan PlanFromJson(const nlohmann::json& document, const std::string& path) {
  Diagnostics diagnostics;
  auto fail = [&](const std::string& message) {
    diagnostics.Error({path, 0, 0}, message);
    throw LoadError(diagnostics);
  };
  if (!document.is_object() || document.value("format", "") != kPlanFormat) {
    fail(fmt::format("not a gpuctl plan (expected \"format\": \"{}\")", kPlanFormat));
  }
  SavedPlan saved;
  try {
    saved.header.cluster = document.at("cluster").get<std::string>();
    saved.header.created = document.at("created").get<std::string>();
    saved.header.inventory_path = document.at("inventory").at("path").get<std::string>();
    saved.header.inventory_digest = document.at("inventory").at("digest").get<std::string>();
    saved.header.catalog_digest = document.at("catalog_digest").get<std::string>();
    std::vector<std::string> nodes;
    for (const auto& n : document.at("nodes")) {
      nodes.push_back(n.at("name").get<std::string>());
      if (n.contains("os")) {  // absent in plans saved before gpuctl read os-release
        saved.header.node_os[nodes.back()] = n.at("os").get<std::string>();
      }
    }
    // Named, not iterated as a temporary: items() would outlive it.
    const nlohmann::json shared_values = document.value("shared_values", nlohmann::json::object());
    std::map<std::string, SharedText> shared;
    for (const auto& [digest, value] : shared_values.items()) {
      shared.emplace(digest, SharedText(value.get<std::string>()));
    }
    std::vector<PlanItem> items;
    for (const auto& j : document.at("items")) {
      PlanItem item;
      item.id = j.at("id").get<std::size_t>();
      item.node = j.at("node").get<std::string>();
      item.step = j.at("step").get<std::string>();
      if (!ParseItemState(j.at("state").get<std::string>(), item.state)) {
        fail(fmt::format("item {}: unknown state '{}'", item.id, j.at("state").dump()));
      }
      item.observed = j.at("observed").get<std::string>();
      item.detail = j.at("detail").get<std::string>();
      item.digest = j.at("digest").get<std::string>();
      item.reboot = j.value("reboot", false);  // absent in plans saved before it was recorded
      for (const auto& name : j.value("restarts", std::vector<std::string>{})) {
        if (const std::uint8_t bit = ParseRestart(name); bit != 0) {
          item.restarts |= bit;
        } else {
          fail(fmt::format("item {}: unknown runtime '{}' in restarts", item.id, name));
        }
      }
      item.after = j.at("after").get<std::vector<std::size_t>>();
      for (auto& [name, value] : j.at("env").get<std::map<std::string, std::string>>()) {
        item.env.emplace(name, SharedText(std::move(value)));
      }
      // Absent in plans saved before long values were written once.
      for (const auto& [name, digest] : j.value("env_shared", nlohmann::json::object())
                                            .get<std::map<std::string, std::string>>()) {
        auto value = shared.find(digest);
        if (value == shared.end()) {
          fail(fmt::format("item {}: {} names shared value {}, which the plan does not have",
                           item.id, name, digest));
        }
        item.env.emplace(name, value->second);
      }
      if (item.id != items.size()) {
        fail(fmt::format("item ids must be 0..n-1 in order; found {} at position {}", item.id,
                         items.size()));
      }
      items.push_back(std::move(item));
    }
    // FromItems links edges by id and throws std::out_of_range on a dangling
    // one, which apply would not catch: a hand-edited or damaged plan is
    // refused here, like any other malformed plan.
    for (const auto& item : items) {
      for (const std::size_t dep : item.after) {
        if (dep >= items.size()) {
          fail(fmt::format("item {}: 'after' names item {}, which the plan does not have", item.id,
                           dep));
        }
      }
    }
    saved.plan = Plan::FromItems(std::move(nodes), std::move(items));
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("malformed plan: {}", e.what()));
  }
  return saved;
}

std::string SavedPlanNotice(const std::string& path) {
  return fmt::format("Saved the plan to {}; `gpuctl apply {}` applies exactly this.\n", path, path);
}

}  // namespace gpuctl
