#include "gpuctl/run/reporter.h"

#include <algorithm>

#include <fmt/format.h>

#include "gpuctl/util/terminal.h"
#include "gpuctl/util/text.h"

namespace gpuctl {
namespace {

// Indents a command's output under its line, dropping a trailing newline.
std::string Indent(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    out += "    | " + text.substr(start, end - start) + '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string ToString(Activity activity) {
  switch (activity) {
    case Activity::kProbe:
      return "probe";
    case Activity::kChange:
      return "change";
    case Activity::kVerify:
      return "verify";
    case Activity::kCheck:
      return "check";
  }
  return "?";
}

void TeeReporter::PhaseStarted(const std::string& title) {
  for (auto* r : reporters_) r->PhaseStarted(title);
}
void TeeReporter::NodeConnected(const std::string& node, std::chrono::milliseconds took) {
  for (auto* r : reporters_) r->NodeConnected(node, took);
}
void TeeReporter::NodeFailed(const std::string& node, const std::string& error) {
  for (auto* r : reporters_) r->NodeFailed(node, error);
}
bool TeeReporter::ShowsScripts() const {
  return std::any_of(reporters_.begin(), reporters_.end(),
                     [](const Reporter* r) { return r->ShowsScripts(); });
}

void TeeReporter::CommandStarted(const std::string& node, const std::string& step,
                                 Activity activity, const std::string& script) {
  for (auto* r : reporters_) r->CommandStarted(node, step, activity, script);
}
void TeeReporter::CommandFinished(const std::string& node, const std::string& step,
                                  Activity activity, const CommandResult& result) {
  for (auto* r : reporters_) r->CommandFinished(node, step, activity, result);
}
void TeeReporter::ItemUpdated(const PlanItem& item) {
  for (auto* r : reporters_) r->ItemUpdated(item);
}
void TeeReporter::Note(const std::string& node, const std::string& message) {
  for (auto* r : reporters_) r->Note(node, message);
}

void LineReporter::Line(const std::string& node, const std::string& step, const std::string& text) {
  std::lock_guard lock(mutex_);
  out_ << FitLine(fmt::format("{}{:<12} {:<28} {}", timestamps_ ? TimeOfDay() + " " : "", node,
                              step, text),
                  width_)
       << '\n'
       << std::flush;
}

void LineReporter::PhaseStarted(const std::string& title) {
  if (verbosity_ > 0) {
    std::lock_guard lock(mutex_);
    out_ << "== " << title << '\n';
  }
}

void LineReporter::NodeConnected(const std::string& node, std::chrono::milliseconds took) {
  if (verbosity_ > 0) {
    Line(node, "-", fmt::format("connected in {} ms", took.count()));
  }
}

void LineReporter::NodeFailed(const std::string& node, const std::string& error) {
  Line(node, "-", "error: " + error);
}

void LineReporter::CommandStarted(const std::string& node, const std::string& step,
                                  Activity activity, const std::string& script) {
  if (activity == Activity::kChange) {
    std::lock_guard lock(mutex_);
    changing_.try_emplace({node, step}, std::chrono::steady_clock::now());
  }
  if (verbosity_ > 0) {
    std::lock_guard lock(mutex_);
    out_ << fmt::format("{:<12} {:<28} {} script:\n{}", node, step, ToString(activity),
                        Indent(script));
  }
}

void LineReporter::CommandFinished(const std::string& node, const std::string& step,
                                   Activity activity, const CommandResult& result) {
  if (verbosity_ == 0) {
    return;
  }
  std::lock_guard lock(mutex_);
  out_ << fmt::format("{:<12} {:<28} {} exit {} in {} ms{}\n", node, step, ToString(activity),
                      result.exit_status, result.duration.count(),
                      result.timed_out ? " (timed out)" : "");
  out_ << Indent(result.out) << Indent(result.err);
}

void LineReporter::ItemUpdated(const PlanItem& item) {
  const bool ended = item.state == ItemState::kApplied || item.state == ItemState::kFailed;
  if (!ended && verbosity_ == 0 && !(show_ok_ && item.state == ItemState::kSatisfied)) {
    return;
  }
  std::string took;
  if (ended) {
    std::lock_guard lock(mutex_);
    if (auto started = changing_.find({item.node, item.step}); started != changing_.end()) {
      took = fmt::format(" {} {}", item.state == ItemState::kApplied ? "in" : "after",
                         HumanDuration(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - started->second)));
      changing_.erase(started);
    }
  }
  Line(item.node, item.step,
       ToString(item.state) + took + (item.detail.empty() ? "" : ": " + item.detail));
}

void LineReporter::Note(const std::string& node, const std::string& message) {
  Line(node, "-", message);
}

void NodeTimer::PhaseStarted(const std::string& title) {
  std::lock_guard lock(mutex_);
  timing_ = title == phase_;
}

void NodeTimer::Mark(const std::string& node) {
  std::lock_guard lock(mutex_);
  if (!timing_) {
    return;
  }
  const auto now = Clock::now();
  auto [span, added] = spans_.try_emplace(node, now, now);
  span->second.second = now;
}

void NodeTimer::NodeFailed(const std::string& node, const std::string& /*error*/) { Mark(node); }
void NodeTimer::CommandStarted(const std::string& node, const std::string& /*step*/,
                               Activity /*activity*/, const std::string& /*script*/) {
  Mark(node);
}
void NodeTimer::CommandFinished(const std::string& node, const std::string& /*step*/,
                                Activity /*activity*/, const CommandResult& /*result*/) {
  Mark(node);
}
void NodeTimer::ItemUpdated(const PlanItem& item) { Mark(item.node); }
void NodeTimer::Note(const std::string& node, const std::string& /*message*/) { Mark(node); }

std::map<std::string, std::chrono::milliseconds> NodeTimer::Durations() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::chrono::milliseconds> out;
  for (const auto& [node, span] : spans_) {
    out[node] = std::chrono::duration_cast<std::chrono::milliseconds>(span.second - span.first);
  }
  return out;
}

}  // namespace gpuctl
