// Reporter: what happens during a run, as events (ninja's Status). The
// terminal printer, plain log lines, the run journal and a test recorder are
// implementations; the phases never print directly. Calls can come from many
// node threads at once, so implementations synchronise themselves.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
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
  // A script is about to run (-v shows it; secrets are already redacted).
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
// "worker1  gpu.driver  change: exit 0 in 12.3s". verbosity 1 adds each
// command and its output.
class LineReporter : public Reporter {
 public:
  LineReporter(std::ostream& out, int verbosity) : out_(out), verbosity_(verbosity) {}
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
};

}  // namespace gpuctl
