#include "gpuctl/run/journal.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/chrono.h>
#include <nlohmann/json.hpp>

#include "gpuctl/run/script_runner.h"
#include "gpuctl/util/input_file.h"
#include "gpuctl/util/shell_quote.h"
#include "gpuctl/util/version.h"

namespace gpuctl {
namespace {

std::string Now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", std::chrono::floor<std::chrono::milliseconds>(
                                                  std::chrono::system_clock::now()));
}

nlohmann::json Event(const char* kind, const std::string& node) {
  return {{"time", Now()}, {"event", kind}, {"node", node}};
}

// A journal line. Events carry what nodes printed, which may be any bytes;
// JSON holds only UTF-8, and a strict dump would throw mid-run.
std::string Line(const nlohmann::json& event) {
  return event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The string at `key` of an event read back; "" when the line is not an
// object or the field is absent or not a string (a damaged line).
std::string Field(const nlohmann::json& event, const char* key) {
  if (!event.is_object()) {
    return "";
  }
  const auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

Journal::Journal(const std::string& run_dir) {
  std::filesystem::create_directories(run_dir);
  out_.open(std::filesystem::path(run_dir) / "journal.jsonl", std::ios::app);
  if (!out_) {
    throw std::runtime_error("cannot write the journal in " + run_dir);
  }
}

void Journal::Write(const std::string& line, bool flush) {
  std::lock_guard lock(mutex_);
  out_ << line << '\n';
  if (flush) {
    out_.flush();
  }
}

void Journal::Flush() {
  std::lock_guard lock(mutex_);
  out_.flush();
}

void Journal::RunStarted(const std::string& command, const std::string& target) {
  auto e = Event("run", "");
  e["format"] = "gpuctl.journal/v1";
  e["gpuctl"] = kVersion;
  e["command"] = command;
  e["inventory"] = target;
  Write(Line(e), true);
}

void Journal::RunFinished(const std::string& outcome, const PlanSummary& summary,
                          std::size_t rebooted, double seconds) {
  auto e = Event("finish", "");
  e["outcome"] = outcome;
  e["seconds"] = seconds;
  e["nodes"] = summary.nodes;
  e["changed"] = summary.applied;
  e["ok"] = summary.ok;
  e["failed"] = summary.failed + summary.errors;
  e["blocked"] = summary.blocked;
  e["rebooted"] = rebooted;
  Write(Line(e), true);
}

void Journal::PhaseStarted(const std::string& title) {
  auto e = Event("phase", "");
  e["phase"] = title;
  Write(Line(e), true);
}

void Journal::NodeConnected(const std::string& node, std::chrono::milliseconds took) {
  auto e = Event("connected", node);
  e["ms"] = took.count();
  Write(Line(e));
}

void Journal::NodeFailed(const std::string& node, const std::string& error) {
  auto e = Event("node-failed", node);
  e["error"] = error;
  Write(Line(e), true);
}

void Journal::CommandStarted(const std::string& node, const std::string& step, Activity activity,
                             const std::string& /*script*/) {
  auto e = Event("start", node);
  e["step"] = step;
  e["activity"] = ToString(activity);
  // On disk before the change runs: a run killed mid-change leaves this
  // line for the next one to name. Other lines may wait in the buffer (a
  // write a line costs a system call for each of a large apply's events).
  Write(Line(e), activity == Activity::kChange);
}

void Journal::CommandFinished(const std::string& node, const std::string& step, Activity activity,
                              const CommandResult& result) {
  auto e = Event("end", node);
  e["step"] = step;
  e["activity"] = ToString(activity);
  e["exit"] = result.exit_status;
  e["ms"] = result.duration.count();
  e["timed_out"] = result.timed_out;
  e["stdout_tail"] = Tail(result.out, 20);
  e["stderr_tail"] = Tail(result.err, 20);
  Write(Line(e));
}

void Journal::ItemUpdated(const PlanItem& item) {
  auto e = Event("item", item.node);
  e["step"] = item.step;
  e["state"] = ToString(item.state);
  e["detail"] = item.detail;
  Write(Line(e));
}

void Journal::Note(const std::string& node, const std::string& message) {
  auto e = Event("note", node);
  e["message"] = message;
  Write(Line(e), true);
}

std::vector<std::pair<std::string, std::string>> UnfinishedSteps(const std::string& journal_path) {
  std::map<std::pair<std::string, std::string>, int> open;  // change started minus ended
  std::vector<std::pair<std::string, std::string>> order;
  // Read a line at a time through input_file.h (a journal can be gigabytes);
  // one that cannot be read (missing, not a regular file) only means no
  // notes about the previous run, as before.
  std::string why;
  ReadInputLines(
      journal_path, kMaxJournalBytes,
      [&](std::string_view line) {
        const auto e = nlohmann::json::parse(line, nullptr, false);
        // A torn last line from a killed run is expected (discarded); so is any
        // other damage, which must not stop the next apply.
        if (e.is_discarded() || Field(e, "activity") != "change") {
          return;
        }
        const std::pair<std::string, std::string> key{Field(e, "node"), Field(e, "step")};
        if (Field(e, "event") == "start") {
          if (open[key]++ == 0) {
            order.push_back(key);
          }
        } else if (Field(e, "event") == "end") {
          --open[key];
        }
      },
      why);
  std::vector<std::pair<std::string, std::string>> unfinished;
  for (const auto& key : order) {
    if (open[key] > 0) {
      unfinished.push_back(key);
    }
  }
  return unfinished;
}

std::string ProcessCommandLine() {
  std::string why;
  const auto raw = ReadInputPrefix("/proc/self/cmdline", 64 * 1024, why);
  if (!raw) {
    return "";
  }
  std::string line;
  std::size_t start = 0;
  while (start < raw->size()) {
    const std::size_t end = std::min(raw->find('\0', start), raw->size());
    const std::string word = raw->substr(start, end - start);
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_./=:,@+%[]") == std::string::npos;
    line += (line.empty() ? "" : " ") + (plain ? word : ShellQuote(word));
    start = end + 1;
  }
  return line;
}

std::string LatestRunDir(const std::string& runs_root) {
  std::error_code ec;
  std::set<std::string> names;  // run dirs are named by start time: sorted = chronological
  for (const auto& entry : std::filesystem::directory_iterator(runs_root, ec)) {
    if (entry.is_directory()) {
      names.insert(entry.path().filename().string());
    }
  }
  return names.empty() ? "" : (std::filesystem::path(runs_root) / *names.rbegin()).string();
}

}  // namespace gpuctl
