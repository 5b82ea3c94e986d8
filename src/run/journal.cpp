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
#include "gpuctl/util/json_line.h"
#include "gpuctl/util/shell_quote.h"
#include "gpuctl/util/version.h"

namespace gpuctl {
namespace {

// The event's time to the second, formatted once per second per thread:
// a large apply writes hundreds of thousands of events a second.
const std::string& Now() {
  thread_local std::chrono::sys_seconds cached_at{};
  thread_local std::string cached;
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  if (now != cached_at || cached.empty()) {
    cached_at = now;
    cached = fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", now);
  }
  return cached;
}

// A journal line: time, event and node first, then the event's fields
// (json_line.h says why lines are not built as JSON objects).
JsonLine EventLine(const char* kind, const std::string& node) {
  JsonLine line;
  line.Reserve(256);  // a typical event's line, grown once
  line.Text("time", Now()).Text("event", kind).Text("node", node);
  return line;
}

// Buffered lines go to the file once this much has gathered, or at once for
// a line that must be on disk: a write per line was a system call (and a
// turn of the mutex's contention) for each of a large apply's million events.
constexpr std::size_t kBufferBytes = 64 * 1024;

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
  buffer_.reserve(kBufferBytes + 4096);
  writing_.reserve(kBufferBytes + 4096);
}

Journal::~Journal() { Flush(); }

void Journal::Write(JsonLine& line, bool flush) {
  std::string text = line.Take();
  text += '\n';
  std::uint64_t end = 0;
  bool full = false;
  {
    std::lock_guard lock(buffer_mutex_);
    buffer_ += text;
    appended_ += text.size();
    end = appended_;
    full = buffer_.size() >= kBufferBytes;
  }
  if (flush || full) {
    WriteUpTo(end);
  }
}

void Journal::WriteUpTo(std::uint64_t end) {
  std::lock_guard file(file_mutex_);
  if (written_ >= end) {
    return;
  }
  std::uint64_t taken = 0;
  {
    std::lock_guard lock(buffer_mutex_);
    writing_.swap(buffer_);
    taken = appended_;
  }
  out_.write(writing_.data(), static_cast<std::streamsize>(writing_.size()));
  out_.flush();
  written_ = taken;
  writing_.clear();
}

void Journal::Flush() {
  std::uint64_t end = 0;
  {
    std::lock_guard lock(buffer_mutex_);
    end = appended_;
  }
  WriteUpTo(end);
}

void Journal::RunStarted(const std::string& command, const std::string& target) {
  Write(EventLine("run", "")
            .Text("format", "gpuctl.journal/v1")
            .Text("gpuctl", kVersion)
            .Text("command", command)
            .Text("inventory", target),
        true);
}

void Journal::RunFinished(const std::string& outcome, const PlanSummary& summary,
                          std::size_t rebooted, double seconds) {
  const auto count = [](std::size_t n) { return static_cast<long long>(n); };
  Write(EventLine("finish", "")
            .Text("outcome", outcome)
            .Real("seconds", seconds)
            .Number("nodes", count(summary.nodes))
            .Number("changed", count(summary.applied))
            .Number("ok", count(summary.ok))
            .Number("failed", count(summary.failed + summary.errors))
            .Number("blocked", count(summary.blocked))
            .Number("rebooted", count(rebooted)),
        true);
}

void Journal::PhaseStarted(const std::string& title) {
  Write(EventLine("phase", "").Text("phase", title), true);
}

void Journal::NodeConnected(const std::string& node, std::chrono::milliseconds took) {
  Write(EventLine("connected", node).Number("ms", took.count()));
}

void Journal::NodeFailed(const std::string& node, const std::string& error) {
  Write(EventLine("node-failed", node).Text("error", error), true);
}

void Journal::CommandStarted(const std::string& node, const std::string& step, Activity activity,
                             const std::string& /*script*/) {
  // On disk before the change runs: a run killed mid-change leaves this
  // line for the next one to name. Other lines may wait in the buffer (a
  // write a line costs a system call for each of a large apply's events).
  Write(EventLine("start", node).Text("step", step).Text("activity", ToString(activity)),
        activity == Activity::kChange);
}

void Journal::CommandFinished(const std::string& node, const std::string& step, Activity activity,
                              const CommandResult& result) {
  Write(EventLine("end", node)
            .Text("step", step)
            .Text("activity", ToString(activity))
            .Number("exit", result.exit_status)
            .Number("ms", result.duration.count())
            .Flag("timed_out", result.timed_out)
            .Text("stdout_tail", Tail(result.out, 20))
            .Text("stderr_tail", Tail(result.err, 20)));
}

void Journal::ItemUpdated(const PlanItem& item) {
  Write(EventLine("item", item.node)
            .Text("step", item.step)
            .Text("state", ToString(item.state))
            .Text("detail", item.detail));
}

void Journal::Note(const std::string& node, const std::string& message) {
  Write(EventLine("note", node).Text("message", message), true);
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
