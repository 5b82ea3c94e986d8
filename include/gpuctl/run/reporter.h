// Reporter: what happens during a run, as events (ninja's Status). The
// terminal printer, plain log lines, the run journal and a test recorder are
// implementations; the phases never print directly. Calls can come from many
// node threads at once, so implementations synchronise themselves.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gpuctl/model/plan.h"
#include "gpuctl/transport/transport.h"

namespace gpuctl {

enum class Activity { kProbe, kChange, kVerify, kCheck };
std::string ToString(Activity activity);

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void PhaseStarted(const std::string& /*title*/) {}
  virtual void NodeConnected(const std::string& /*node*/, std::chrono::milliseconds /*took*/) {}
  virtual void NodeFailed(const std::string& /*node*/, const std::string& /*error*/) {}
  // Whether CommandStarted is given the script's text: only -v shows it,
  // and its redacted copy cost a large apply a copy of every script.
  [[nodiscard]] virtual bool ShowsScripts() const { return false; }
  // A script is about to run: its text when ShowsScripts (secrets already
  // redacted), else "".
  virtual void CommandStarted(const std::string& /*node*/, const std::string& /*step*/,
                              Activity /*activity*/, const std::string& /*script*/) {}
  virtual void CommandFinished(const std::string& /*node*/, const std::string& /*step*/,
                               Activity /*activity*/, const CommandResult& /*result*/) {}
  // An item's state changed (probed, applied, failed...).
  virtual void ItemUpdated(const PlanItem& /*item*/) {}
  virtual void Note(const std::string& /*node*/, const std::string& /*message*/) {}
};

// Sends every event to several reporters (terminal + journal, say).
class TeeReporter : public Reporter {
 public:
  void Add(Reporter* reporter) { reporters_.push_back(reporter); }
  [[nodiscard]] bool ShowsScripts() const override;
  void PhaseStarted(const std::string& title) override;
  void NodeConnected(const std::string& node, std::chrono::milliseconds took) override;
  void NodeFailed(const std::string& node, const std::string& error) override;
  void CommandStarted(const std::string& node, const std::string& step, Activity activity,
                      const std::string& script) override;
  void CommandFinished(const std::string& node, const std::string& step, Activity activity,
                       const CommandResult& result) override;
  void ItemUpdated(const PlanItem& item) override;
  void Note(const std::string& node, const std::string& message) override;

 private:
  std::vector<Reporter*> reporters_;
};

// Progress lines on a stream (stderr), each naming node and step:
// "worker1  gpu.driver  applied in 12.3s", the time from the step's first
// change command to its verdict (a reboot it waited for included).
// verbosity 1 adds each command and its output. What is already true (a step
// found satisfied) is said only with ShowOk or -v.
class LineReporter : public Reporter {
 public:
  LineReporter(std::ostream& out, int verbosity) : out_(out), verbosity_(verbosity) {}
  // Lines cut to `width` columns (util/terminal.h: the terminal's width, 0
  // when the stream is not a terminal); a command's output under -v is not.
  void SetWidth(std::size_t width) { width_ = width; }
  void ShowOk(bool show) { show_ok_ = show; }
  // Each line starts with the local time ("14:03:07 "): for output that is
  // read later (a pipe, a log, CI), where no board shows what runs when.
  void SetTimestamps(bool on) { timestamps_ = on; }
  [[nodiscard]] bool ShowsScripts() const override { return verbosity_ > 0; }
  void PhaseStarted(const std::string& title) override;
  void NodeConnected(const std::string& node, std::chrono::milliseconds took) override;
  void NodeFailed(const std::string& node, const std::string& error) override;
  void CommandStarted(const std::string& node, const std::string& step, Activity activity,
                      const std::string& script) override;
  void CommandFinished(const std::string& node, const std::string& step, Activity activity,
                       const CommandResult& result) override;
  void ItemUpdated(const PlanItem& item) override;
  void Note(const std::string& node, const std::string& message) override;

 private:
  void Line(const std::string& node, const std::string& step, const std::string& text);
  std::mutex mutex_;
  std::ostream& out_;
  int verbosity_;
  std::size_t width_ = 0;
  bool show_ok_ = false;
  bool timestamps_ = false;
  // When each step being changed ran its first change command, by node and step.
  std::map<std::pair<std::string, std::string>, std::chrono::steady_clock::time_point> changing_;
};

// How long each node worked in one phase ("apply"): from its first event in
// that phase to its last. What apply's recap shows beside each node.
class NodeTimer : public Reporter {
 public:
  explicit NodeTimer(std::string phase = "apply") : phase_(std::move(phase)) {}
  void PhaseStarted(const std::string& title) override;
  void NodeFailed(const std::string& node, const std::string& error) override;
  void CommandStarted(const std::string& node, const std::string& step, Activity activity,
                      const std::string& script) override;
  void CommandFinished(const std::string& node, const std::string& step, Activity activity,
                       const CommandResult& result) override;
  void ItemUpdated(const PlanItem& item) override;
  void Note(const std::string& node, const std::string& message) override;
  // Nodes that did something in the phase, and for how long.
  [[nodiscard]] std::map<std::string, std::chrono::milliseconds> Durations() const;

 private:
  void Mark(const std::string& node);
  using Clock = std::chrono::steady_clock;
  mutable std::mutex mutex_;
  std::string phase_;
  bool timing_ = false;
  std::map<std::string, std::pair<Clock::time_point, Clock::time_point>> spans_;
};

}  // namespace gpuctl
