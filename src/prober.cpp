#include "gpuctl/prober.h"

#include <fmt/format.h>

namespace gpuctl {
namespace {

std::string Trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return "";
  }
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// What a probe printed is kept in plans and journals; cap it so a chatty
// probe cannot bloat them.
constexpr std::size_t kMaxObserved = 4096;

}  // namespace

std::string Tail(const std::string& text, std::size_t max_lines) {
  const std::string trimmed = Trim(text);
  std::size_t pos = trimmed.size();
  for (std::size_t lines = 0; lines < max_lines && pos > 0; ++lines) {
    const auto nl = trimmed.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      return trimmed;
    }
    pos = nl;
  }
  return pos == 0 ? trimmed : trimmed.substr(pos + 1);
}

std::string WithPrelude(const std::string& prelude, const std::string& script) {
  if (prelude.empty()) {
    return script;
  }
  return prelude + "\n# --- step ---\n" + script;
}

ItemState StateFromProbe(const CommandResult& result, bool alive) {
  if (result.exit_status < 0 && !alive) {
    return ItemState::kUnreachable;
  }
  switch (result.exit_status) {
    case kProbeSatisfied:
      return ItemState::kSatisfied;
    case kProbeNeedsChange:
      return ItemState::kNeedsChange;
    case kProbeUnknown:
      return ItemState::kKnownAfterApply;
    default:
      return ItemState::kProbeFailed;
  }
}

ItemState Prober::Probe(const Step& step, PlanItem& item) {
  item.state = Run(step, item, step.probe, Activity::kProbe);
  return item.state;
}

bool Prober::Verify(const Step& step, PlanItem& item) {
  const std::string& script = step.verify.empty() ? step.probe : step.verify;
  return Run(step, item, script, Activity::kVerify) == ItemState::kSatisfied;
}

ItemState Prober::Run(const Step& step, PlanItem& item, const std::string& script,
                      Activity activity) {
  Command command;
  command.script = WithPrelude(prelude_, script);
  command.env = item.env;
  // -v shows the step's own script; the prelude is the same for every step.
  reporter_.CommandStarted(item.node, step.id, activity, redactor_.Apply(script));
  CommandResult result = connection_.Run(command);
  result.out = redactor_.Apply(std::move(result.out));
  result.err = redactor_.Apply(std::move(result.err));
  reporter_.CommandFinished(item.node, step.id, activity, result);

  const ItemState state = StateFromProbe(result, connection_.Alive());
  item.observed = Trim(result.out).substr(0, kMaxObserved);
  item.detail.clear();
  if (state == ItemState::kProbeFailed) {
    item.detail = result.timed_out ? fmt::format("{} timed out", ToString(activity))
                                   : fmt::format("{} exited {}: {}", ToString(activity),
                                                 result.exit_status, Tail(result.err, 3));
  } else if (state == ItemState::kUnreachable) {
    item.detail = "connection lost: " + Tail(result.err, 1);
  }
  return state;
}

}  // namespace gpuctl
