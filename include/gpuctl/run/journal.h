// Journal: the run's record on disk, one JSON object per line, written as
// things happen (so an interrupted run leaves an accurate trail): every
// command's start and end with duration and output tail, every item's state
// change, node failures. Values are already redacted by the time they arrive.
#pragma once

#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>

#include "gpuctl/run/reporter.h"
#include "gpuctl/util/json_line.h"

namespace gpuctl {

class Journal : public Reporter {
 public:
  // Creates `run_dir` (and parents) and opens run_dir/journal.jsonl.
  // Throws std::runtime_error if it cannot.
  explicit Journal(const std::string& run_dir);
  // Writes what is still buffered.
  ~Journal() override;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void PhaseStarted(const std::string& title) override;
  void NodeConnected(const std::string& node, std::chrono::milliseconds took) override;
  void NodeFailed(const std::string& node, const std::string& error) override;
  void CommandStarted(const std::string& node, const std::string& step, Activity activity,
                      const std::string& script) override;
  void CommandFinished(const std::string& node, const std::string& step, Activity activity,
                       const CommandResult& result) override;
  void ItemUpdated(const PlanItem& item) override;
  void Note(const std::string& node, const std::string& message) override;
  // The journal's first line: what was run (the command as typed, the
  // inventory or saved plan it applies), for `gpuctl runs`.
  void RunStarted(const std::string& command, const std::string& target);
  // Its last: how the run ended ("applied", "failed", ...), its counts and
  // duration. A journal without one was cut off (killed, or still running).
  void RunFinished(const std::string& outcome, const PlanSummary& summary, std::size_t rebooted,
                   double seconds);
  // Writes what is buffered (the run's end calls it).
  void Flush();

 private:
  // `flush`: the line must be on disk before the run goes on. Takes the
  // line's text (the line is spent).
  void Write(JsonLine& line, bool flush = false);
  // Hands the file every line buffered so far, unless a writer before this
  // one already took the line that ends at byte `end` of the journal.
  void WriteUpTo(std::uint64_t end);
  // Two locks, so that adding a line never waits for the file: lines go
  // into `buffer_` in order under buffer_mutex_; one writer at a time,
  // under file_mutex_, swaps the buffer out and writes it. Writers are
  // served in turn, so the file keeps the lines' order, and a flushing
  // writer whose line a writer before it took returns without a system
  // call (a walker whose change must be on disk first, among 64, often
  // finds that done by the time it holds the file).
  std::mutex buffer_mutex_;
  std::string buffer_;          // lines not yet taken by a writer
  std::uint64_t appended_ = 0;  // bytes ever put in buffer_
  std::mutex file_mutex_;
  std::ofstream out_;
  std::string writing_;        // the taken lines (kept for its capacity)
  std::uint64_t written_ = 0;  // bytes ever handed to out_
};

// Steps a previous run started and never finished (it was killed, or lost the
// node mid-change), as "node step" pairs, from that run's journal.
std::vector<std::pair<std::string, std::string>> UnfinishedSteps(const std::string& journal_path);

// This process's command line, its words joined by spaces, each quoted
// for a shell where it needs it (what `gpuctl runs` shows).
std::string ProcessCommandLine();

// The newest run directory under `runs_root`, or "" if none.
std::string LatestRunDir(const std::string& runs_root);

}  // namespace gpuctl
