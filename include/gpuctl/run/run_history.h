// Run history: the apply runs on record under gpuctl's state directory,
// one directory per run (<state>/<cluster>/runs/<id>/journal.jsonl, with
// the run's plan.json beside it), read back for `gpuctl runs` and `gpuctl
// logs`. A run is summed up from its journal's first line (the "run"
// event: command, inventory) and its last (the "finish" event: outcome,
// counts, duration), so listing many runs does not read their journals
// whole; docs/journal.md has the format.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gpuctl {

// $XDG_STATE_HOME/gpuctl, or ~/.local/state/gpuctl.
std::string StateDir();

struct RunRecord {
  std::string id;       // the run directory's name: its start time and gpuctl's pid
  std::string cluster;  // the directory above runs/
  std::string dir;
  std::string started;    // the "run" event's time, else the first line's
  std::string command;    // as typed; "" for a journal older than the "run" event
  std::string inventory;  // the inventory (or saved plan) it applied
  // From the "finish" event; "unfinished" when the run left none (killed,
  // or still running), with the duration up to its last line; "unknown"
  // for a journal older than the "run" event.
  std::string outcome = "unfinished";
  double seconds = 0;
  bool finished = false;
  std::size_t nodes = 0, changed = 0, ok = 0, failed = 0, blocked = 0, rebooted = 0;
};

// Every run under `state_dir`, of `cluster` only when it is not empty,
// oldest first (a run's id starts with its start time).
std::vector<RunRecord> ListRuns(const std::string& state_dir, const std::string& cluster);

// The run `which` names among `runs`: its id, a prefix of exactly one id,
// or "last". nullopt with `why` otherwise.
std::optional<RunRecord> FindRun(const std::vector<RunRecord>& runs, std::string_view which,
                                 std::string& why);

// What `gpuctl logs` keeps of a journal.
struct LogFilter {
  std::string node;  // "" for every node
  std::string step;  // "" for every step; a group ("k8s") matches its steps
};
bool LogLineMatches(const nlohmann::json& event, const LogFilter& filter);

// Calls `each` with every event of the run's journal that `filter` keeps,
// in order; a damaged line is skipped. False with `why` if the journal
// cannot be read.
bool ReadRunEvents(const RunRecord& run, const LogFilter& filter,
                   const std::function<void(const nlohmann::json&)>& each, std::string& why);

}  // namespace gpuctl
