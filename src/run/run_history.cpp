#include "gpuctl/run/run_history.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpuctl/util/input_file.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

// The journal's last lines hold the "finish" event: a run ends with it.
constexpr std::uint64_t kTailBytes = 256 * 1024;

std::string Text(const nlohmann::json& event, const char* key) {
  if (!event.is_object()) {
    return "";
  }
  const auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : "";
}

std::size_t Count(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_number_unsigned() ? it->get<std::size_t>() : 0;
}

// "2026-11-24T15:04:05Z" as seconds since the epoch (UTC); -1 if it is not.
double EpochSeconds(const std::string& time) {
  std::tm tm{};
  if (strptime(time.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) {
    return -1;
  }
  return static_cast<double>(timegm(&tm));
}

// The last complete lines of `path`, up to kTailBytes of them, newest last.
std::vector<std::string> TailLines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  if (!in) {
    return lines;
  }
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  const std::uint64_t start = size > kTailBytes ? size - kTailBytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string line;
  if (start > 0) {
    std::getline(in, line);  // most likely cut: the whole of it lies before
  }
  while (std::getline(in, line)) {
    lines.push_back(line);
  }
  return lines;
}

RunRecord ReadRecord(const fs::path& dir, const std::string& cluster) {
  RunRecord run;
  run.id = dir.filename().string();
  run.cluster = cluster;
  run.dir = dir.string();
  const std::string journal = (dir / "journal.jsonl").string();
  std::string why;
  if (auto head = ReadInputPrefix(journal, 64 * 1024, why)) {
    const auto first = nlohmann::json::parse(head->substr(0, head->find('\n')), nullptr, false);
    run.started = Text(first, "time");
    if (Text(first, "event") == "run") {
      run.command = Text(first, "command");
      run.inventory = Text(first, "inventory");
    }
  }
  std::string last_time;
  for (const std::string& line : TailLines(journal)) {
    const auto event = nlohmann::json::parse(line, nullptr, false);
    if (event.is_discarded()) {
      continue;  // a line torn by a killed run
    }
    last_time = Text(event, "time").empty() ? last_time : Text(event, "time");
    if (Text(event, "event") != "finish") {
      continue;
    }
    run.finished = true;
    run.outcome = Text(event, "outcome");
    run.seconds = event.value("seconds", 0.0);
    run.nodes = Count(event, "nodes");
    run.changed = Count(event, "changed");
    run.ok = Count(event, "ok");
    run.failed = Count(event, "failed");
    run.blocked = Count(event, "blocked");
    run.rebooted = Count(event, "rebooted");
  }
  if (!run.finished && run.command.empty()) {
    run.outcome = "unknown";  // a journal from before runs were summed up
  }
  if (!run.finished && !run.started.empty() && !last_time.empty()) {
    const double from = EpochSeconds(run.started);
    const double to = EpochSeconds(last_time);
    run.seconds = from >= 0 && to >= from ? to - from : 0;
  }
  return run;
}

}  // namespace

std::string StateDir() {
  const char* state = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = state != nullptr && *state != '\0'
                            ? fs::path(state)
                            : fs::path(home != nullptr ? home : "/root") / ".local/state";
  return (base / "gpuctl").string();
}

std::vector<RunRecord> ListRuns(const std::string& state_dir, const std::string& cluster) {
  std::vector<RunRecord> runs;
  std::error_code ec;
  for (const auto& cluster_dir : fs::directory_iterator(state_dir, ec)) {
    const std::string name = cluster_dir.path().filename().string();
    if (!cluster.empty() && name != cluster) {
      continue;
    }
    std::error_code inner;
    for (const auto& run_dir : fs::directory_iterator(cluster_dir.path() / "runs", inner)) {
      if (run_dir.is_directory(inner) && fs::exists(run_dir.path() / "journal.jsonl", inner)) {
        runs.push_back(ReadRecord(run_dir.path(), name));
      }
    }
  }
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.id != b.id ? a.id < b.id : a.cluster < b.cluster;
  });
  return runs;
}

std::optional<RunRecord> FindRun(const std::vector<RunRecord>& runs, std::string_view which,
                                 std::string& why) {
  if (runs.empty()) {
    why = "no runs on record";
    return std::nullopt;
  }
  if (which == "last") {
    return runs.back();
  }
  std::vector<const RunRecord*> found;
  for (const RunRecord& run : runs) {
    if (run.id == which) {
      return run;
    }
    if (run.id.starts_with(which)) {
      found.push_back(&run);
    }
  }
  if (found.size() == 1) {
    return *found.front();
  }
  why = found.empty() ? "no run '" + std::string(which) + "' (gpuctl runs lists them)"
                      : "'" + std::string(which) + "' names " + std::to_string(found.size()) +
                            " runs; give more of the id";
  return std::nullopt;
}

bool LogLineMatches(const nlohmann::json& event, const LogFilter& filter) {
  const std::string node = Text(event, "node");
  const std::string step = Text(event, "step");
  // Run-wide events (the run, phases, its end) stay: they frame the rest.
  if (!filter.node.empty() && !node.empty() && node != filter.node) {
    return false;
  }
  if (!filter.node.empty() && node.empty() && Text(event, "event") == "note") {
    return false;
  }
  if (!filter.step.empty()) {
    if (step.empty()) {
      return Text(event, "event") != "note" && Text(event, "event") != "node-failed" &&
             Text(event, "event") != "connected";
    }
    const bool in_group = step.starts_with(filter.step + ".");
    if (step != filter.step && !in_group) {
      return false;
    }
  }
  return true;
}

bool ReadRunEvents(const RunRecord& run, const LogFilter& filter,
                   const std::function<void(const nlohmann::json&)>& each, std::string& why) {
  return ReadInputLines(
      (fs::path(run.dir) / "journal.jsonl").string(), kMaxJournalBytes,
      [&](std::string_view line) {
        const auto event = nlohmann::json::parse(line, nullptr, false);
        if (!event.is_discarded() && event.is_object() && LogLineMatches(event, filter)) {
          each(event);
        }
      },
      why);
}

}  // namespace gpuctl
