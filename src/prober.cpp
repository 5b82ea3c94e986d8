#include "gpuctl/prober.h"

#include <fmt/format.h>

#include "gpuctl/probe_batch.h"

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
  if (!AddInputs(step, item, command.env, activity)) {
    return item.state;
  }
  // -v shows the step's own script; the prelude is the same for every step.
  reporter_.CommandStarted(item.node, step.id, activity, redactor_.Apply(script));
  return Record(step, item, connection_.Run(command), activity);
}

ItemState Prober::Record(const Step& step, PlanItem& item, CommandResult result,
                         Activity activity) {
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

bool Prober::AddInputs(const Step& step, PlanItem& item, std::map<std::string, std::string>& env,
                       Activity activity) {
  if (inputs_ == nullptr || (step.inputs.empty() && step.secrets.empty())) {
    return true;
  }
  std::string why;
  if (inputs_->Resolve(step, use_, env, why)) {
    return true;
  }
  item.state = activity == Activity::kProbe ? ItemState::kKnownAfterApply : ItemState::kNeedsChange;
  item.observed = redactor_.Apply(why);
  item.detail.clear();
  return false;
}

void Prober::RunAll(const std::vector<Target>& all_targets, Activity activity) {
  // Items whose inputs cannot be read are settled here, without a script.
  std::vector<Target> targets;
  std::vector<BatchEntry> entries;
  for (const auto& t : all_targets) {
    std::map<std::string, std::string> env = t.item->env;
    if (!AddInputs(*t.step, *t.item, env, activity)) {
      continue;
    }
    const std::string& script =
        activity == Activity::kProbe || t.step->verify.empty() ? t.step->probe : t.step->verify;
    targets.push_back(t);
    entries.push_back({t.item->id, script, std::move(env)});
  }
  if (targets.empty()) {
    return;
  }
  const std::string nonce = MakeNonce();
  Command command;
  command.script = BuildBatchScript(prelude_, entries, nonce);
  const CommandResult batch = connection_.Run(command);
  auto results = SplitBatchOutput(batch.out, batch.err, nonce);
  const bool alive = connection_.Alive();
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    reporter_.CommandStarted(t.item->node, t.step->id, activity,
                             redactor_.Apply(entries[i].script));
    auto it = results.find(t.item->id);
    CommandResult result;
    if (it != results.end()) {
      result = std::move(it->second);
    } else {
      // Cut off: the connection dropped or the whole batch timed out here.
      result.timed_out = batch.timed_out;
      result.err = batch.err.substr(batch.err.rfind('\n', batch.err.size() - 1) + 1);
    }
    t.item->state = Record(*t.step, *t.item, std::move(result), activity);
    if (it == results.end() && !alive) {
      t.item->state = ItemState::kUnreachable;
      t.item->detail = "connection lost";
    }
  }
}

}  // namespace gpuctl
