// LiveBoard: what a run is doing now, for the person watching it (ninja's
// smart-terminal status line, grown to a few lines).
//
// On a terminal it keeps a board at the bottom of the screen, redrawn in
// place: a line per node at work with its current step and for how long
// (nodes doing the same thing folded into one line, oldest first), then the
// phase's counts and a bar. The lines of finished steps scroll above it.
//
// Elsewhere (a pipe, a log file, CI) nothing is redrawn: every line carries
// the time of day and, every `heartbeat`, the board is written once as plain
// lines, so a log shows what a long step was doing and for how long.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpuctl/model/plan.h"
#include "gpuctl/run/reporter.h"

namespace gpuctl {

struct BoardOptions {
  bool terminal = false;  // redraw in place (a TTY outside CI, without -v)
  int size_fd = -1;       // the terminal, asked for its size at each redraw
  std::size_t width = 0;  // columns when size_fd is not given; 0: do not cut
  std::size_t height = 0;
  int verbosity = 0;
  bool show_ok = false;
  std::chrono::milliseconds redraw{200};  // terminal: how often elapsed times move
  std::chrono::seconds heartbeat{30};     // plain: how often the board is written
  bool ticker = true;  // false: no thread, and frames only on Tick, Show, Hide (tests)
};

// Whether the board may redraw in place: stderr is a terminal that can move
// its cursor, not under CI (whose log would keep every frame), and -v is not
// asking for each command's output.
bool BoardFitsTerminal(bool is_tty, const char* ci, const char* term, int verbosity);

class LiveBoard : public Reporter {
 public:
  using Clock = std::chrono::steady_clock;

  // `nodes`: the inventory's node names, in its order.
  LiveBoard(std::ostream& out, BoardOptions options, std::vector<std::string> nodes);
  ~LiveBoard() override;
  LiveBoard(const LiveBoard&) = delete;
  LiveBoard& operator=(const LiveBoard&) = delete;

  // Apply: the steps each node has left to do, counted for the bar.
  void Expect(const Plan& plan);
  // Erases the board and stops drawing it (before the command prints its
  // result or asks a question); Show draws it again.
  void Hide();
  void Show();
  // The board at `now`, without escape codes or cutting: tests read it.
  [[nodiscard]] std::vector<std::string> Render(Clock::time_point now) const;
  // Terminal: redraw. Plain: write the board if a heartbeat is due.
  void Tick(Clock::time_point now);

  void PhaseStarted(const std::string& title) override;
  void NodeConnected(const std::string& node, std::chrono::milliseconds took) override;
  void NodeFailed(const std::string& node, const std::string& error) override;
  [[nodiscard]] bool ShowsScripts() const override { return lines_.ShowsScripts(); }
  void CommandStarted(const std::string& node, const std::string& step, Activity activity,
                      const std::string& script) override;
  void CommandFinished(const std::string& node, const std::string& step, Activity activity,
                       const CommandResult& result) override;
  void ItemUpdated(const PlanItem& item) override;
  void Note(const std::string& node, const std::string& message) override;

 private:
  // One node in the current phase.
  struct Work {
    std::string step;  // the command running now, if any
    Activity activity = Activity::kProbe;
    std::string note;  // what it waits on while no command runs ("rebooting")
    Clock::time_point since;
    std::size_t expected = 0;  // units of work this phase (steps, or 1 per node)
    std::size_t finished = 0;
    bool failed = false;
  };
  enum class Unit { kNone, kNodes, kSteps };
  struct Row {
    std::vector<std::string> names;
    std::string text;
    Clock::time_point since;
  };

  [[nodiscard]] std::vector<Row> Rows() const;
  [[nodiscard]] std::string Summary(Clock::time_point now) const;
  [[nodiscard]] std::size_t MaxRows() const;
  Work* Find(const std::string& node);
  // After an event: redraw now if the last frame is old enough.
  void Changed();
  void Draw(Clock::time_point now);
  void WriteHeartbeat(Clock::time_point now);
  void TickerLoop();

  mutable std::mutex mutex_;
  std::ostream& out_;
  BoardOptions options_;
  std::vector<std::string> order_;
  std::unordered_map<std::string, Work> work_;
  std::unordered_set<std::size_t> expected_items_;
  std::string phase_;
  Unit unit_ = Unit::kNone;
  Clock::time_point started_;
  Clock::time_point last_draw_;
  Clock::time_point last_beat_;
  std::ostringstream scrolled_;  // terminal: finished lines not yet written
  LineReporter lines_;           // formats the lines that scroll
  bool visible_ = false;
  std::size_t drawn_ = 0;  // board lines on the screen now
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread ticker_;
};

}  // namespace gpuctl
