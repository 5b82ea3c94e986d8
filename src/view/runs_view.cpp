#include "gpuctl/view/runs_view.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpuctl/run/executor.h"

namespace gpuctl {
namespace {

std::string Text(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : "";
}

// "2026-11-24T15:04:05Z" -> "2026-11-24 15:04:05"
std::string When(const std::string& time) {
  std::string when = time;
  std::replace(when.begin(), when.end(), 'T', ' ');
  if (!when.empty() && when.back() == 'Z') {
    when.pop_back();
  }
  return when;
}

// "15:04:05" of an event's time.
std::string Clock(const nlohmann::json& event) {
  const std::string time = Text(event, "time");
  const auto t = time.find('T');
  return t == std::string::npos ? time : time.substr(t + 1, 8);
}

std::string Seconds(double seconds) {
  if (seconds < 10) {
    return fmt::format("{:.1f}s", seconds);
  }
  return Duration(std::chrono::seconds(static_cast<long>(seconds + 0.5)));
}

// Each line of `text`, indented, with `mark` ("|" stdout, "!" stderr).
void Indented(std::string& out, const std::string& text, const char* mark) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    out += fmt::format("    {} {}\n", mark, line);
  }
}

}  // namespace

void WriteRunsText(std::ostream& out, const std::vector<RunRecord>& runs) {
  if (runs.empty()) {
    out << "No runs on record.\n";
    return;
  }
  std::size_t id_width = 3;
  std::size_t cluster_width = 7;
  std::size_t outcome_width = 7;
  for (const RunRecord& run : runs) {
    id_width = std::max(id_width, run.id.size());
    cluster_width = std::max(cluster_width, run.cluster.size());
    outcome_width = std::max(outcome_width, run.outcome.size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:<19}  {:>8}  {:<{}}  {:>5}  {:>7}  {:>6}  {}\n", "RUN",
                     id_width, "CLUSTER", cluster_width, "STARTED", "TOOK", "OUTCOME",
                     outcome_width, "NODES", "CHANGED", "FAILED", "COMMAND");
  for (const RunRecord& run : runs) {
    const auto count = [&](std::size_t n) {
      return run.finished ? std::to_string(n) : std::string("-");
    };
    out << fmt::format("{:<{}}  {:<{}}  {:<19}  {:>8}  {:<{}}  {:>5}  {:>7}  {:>6}  {}\n", run.id,
                       id_width, run.cluster, cluster_width, When(run.started),
                       Seconds(run.seconds), run.outcome, outcome_width, count(run.nodes),
                       count(run.changed), count(run.failed),
                       run.command.empty() ? "-" : run.command);
  }
}

void WriteRunsJson(std::ostream& out, const std::vector<RunRecord>& runs) {
  nlohmann::json list = nlohmann::json::array();
  for (const RunRecord& run : runs) {
    list.push_back({{"id", run.id},
                    {"cluster", run.cluster},
                    {"dir", run.dir},
                    {"started", run.started},
                    {"command", run.command},
                    {"inventory", run.inventory},
                    {"outcome", run.outcome},
                    {"finished", run.finished},
                    {"seconds", run.seconds},
                    {"nodes", run.nodes},
                    {"changed", run.changed},
                    {"ok", run.ok},
                    {"failed", run.failed},
                    {"blocked", run.blocked},
                    {"rebooted", run.rebooted}});
  }
  const nlohmann::json doc = {{"format", "gpuctl.runs/v1"}, {"runs", list}};
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

std::string LogEventText(const nlohmann::json& event) {
  const std::string kind = Text(event, "event");
  const std::string node = Text(event, "node");
  const std::string step = Text(event, "step");
  const std::string at = Clock(event);
  if (kind == "run") {
    return fmt::format("{} run: {} (gpuctl {})\n", at, Text(event, "command"),
                       Text(event, "gpuctl"));
  }
  if (kind == "phase") {
    return fmt::format("{} == {}\n", at, Text(event, "phase"));
  }
  if (kind == "connected") {
    return fmt::format("{} {} connected ({} ms)\n", at, node, event.value("ms", 0));
  }
  if (kind == "start") {
    return fmt::format("{} {} {} {} started\n", at, node, step, Text(event, "activity"));
  }
  if (kind == "end") {
    std::string text = fmt::format("{} {} {} {} {} ({})\n", at, node, step, Text(event, "activity"),
                                   event.value("timed_out", false)
                                       ? std::string("timed out")
                                       : fmt::format("exit {}", event.value("exit", -1)),
                                   Seconds(event.value("ms", 0) / 1000.0));
    Indented(text, Text(event, "stdout_tail"), "|");
    Indented(text, Text(event, "stderr_tail"), "!");
    return text;
  }
  if (kind == "item") {
    const std::string detail = Text(event, "detail");
    return fmt::format("{} {} {}: {}{}\n", at, node, step, Text(event, "state"),
                       detail.empty() ? "" : " (" + detail + ")");
  }
  if (kind == "note") {
    return fmt::format("{} {}: {}\n", at, node.empty() ? "gpuctl" : node, Text(event, "message"));
  }
  if (kind == "node-failed") {
    return fmt::format("{} {} FAILED: {}\n", at, node, Text(event, "error"));
  }
  if (kind == "finish") {
    return fmt::format("{} finished: {} in {} ({} nodes: {} changed, {} failed, {} rebooted)\n", at,
                       Text(event, "outcome"), Seconds(event.value("seconds", 0.0)),
                       event.value("nodes", 0), event.value("changed", 0), event.value("failed", 0),
                       event.value("rebooted", 0));
  }
  return fmt::format("{} {}\n", at,
                     event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace gpuctl
