#include "gpuctl/run/prober.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "gpuctl/run/failure_text.h"
#include "gpuctl/run/probe_batch.h"
#include "gpuctl/util/shell_quote.h"

namespace gpuctl {
namespace {

// What a probe or verification is sent: the item's environment less the
// parameters its step gives to the change only (Step::change_params), which
// are never copied, however long.
std::map<std::string, std::string> ReadOnlyEnvironment(const Step& step, const StepEnv& env) {
  // The change-only names as exported, once per call rather than once for
  // each variable (a probe batch asks this for every item of every node).
  std::vector<std::string> change_only;
  change_only.reserve(step.change_params.size());
  for (const std::string& p : step.change_params) {
    change_only.push_back(ExportName(p));
  }
  std::map<std::string, std::string> plain;
  for (const auto& [name, value] : env) {
    if (std::find(change_only.begin(), change_only.end(), name) == change_only.end()) {
      plain.emplace_hint(plain.end(), name, value.str());  // env is sorted already
    }
  }
  return plain;
}

// What a probe printed is kept in plans and journals; cap it so a chatty
// probe cannot bloat them.
constexpr std::size_t kMaxObserved = 4096;

// Printed between the probe's output and the verification's in a verdict
// script, so each can be reported on its own.
constexpr const char* kVerifyMarker = "@@gpuctl-verify";

// The verdict script's output: what to show is the part that decided.
std::string DecidingOutput(const std::string& out, ItemState state) {
  const std::string marker = std::string("\n") + kVerifyMarker + "\n";
  const auto at = out.rfind(marker);
  if (at == std::string::npos) {
    return out;
  }
  const std::string probe_part = out.substr(0, at);
  const std::string verify_part = out.substr(at + marker.size());
  if (state == ItemState::kNeedsAttention || Trimmed(probe_part).empty()) {
    return verify_part;
  }
  return probe_part;
}

}  // namespace

namespace {

// The glue between the two parts of a verdict script. Built once: the fake
// transport takes every verdict script apart by them.
const std::string& VerdictMiddle() {
  static const std::string middle = fmt::format(
      "\n)\ngpuctl_probe_rc=$?\n"
      "if [ \"$gpuctl_probe_rc\" -ne 0 ]; then exit \"$gpuctl_probe_rc\"; fi\n"
      "printf '\\n%s\\n' '{}'\n(\n",
      kVerifyMarker);
  return middle;
}

const std::string& VerdictEnd() {
  static const std::string end = fmt::format("\n) || exit {}", kProbeAttention);
  return end;
}

}  // namespace

std::string PendingRebootCheck(const std::string& step_id) {
  return fmt::format(
      "if grep -qxF {} {} 2>/dev/null; then\n"
      "  echo 'changed by an earlier run whose reboot did not happen: reboot pending'\n"
      "  exit {}\n"
      "fi\n",
      ShellQuote(step_id), kRebootPendingFile, kProbeNeedsChange);
}

std::string PendingRebootMark(const std::string& step_id) {
  return fmt::format("printf '%s\\n' {} >>{}\n", ShellQuote(step_id), kRebootPendingFile);
}

bool ParsePendingRebootCheck(const std::string& script, std::string& step_id, std::string& rest) {
  const std::string head = "if grep -qxF '";
  if (script.rfind(head, 0) != 0) {
    return false;
  }
  const auto quote = script.find('\'', head.size());
  if (quote == std::string::npos) {
    return false;
  }
  step_id = script.substr(head.size(), quote - head.size());
  const std::string check = PendingRebootCheck(step_id);
  if (script.compare(0, check.size(), check) != 0) {
    return false;
  }
  rest = script.substr(check.size());
  return true;
}

bool ParsePendingRebootMark(const std::string& script, std::string& step_id) {
  const std::string head = "printf '%s\\n' '";
  if (script.rfind(head, 0) != 0) {
    return false;
  }
  step_id = script.substr(head.size(), script.find('\'', head.size()) - head.size());
  return script == PendingRebootMark(step_id);
}

std::string VerdictScript(const Step& step) {
  // A probe may not see that a reboot is owed (the lab has no nouveau to
  // find loaded; a config file is read only at boot): what gpuctl itself
  // recorded in /run, which a reboot empties, says so first.
  const std::string probe = step.reboot ? PendingRebootCheck(step.id) + step.probe : step.probe;
  if (step.verify.empty() || step.verify == step.probe) {
    return probe;
  }
  // Each part in its own subshell: a probe's `exit 0` must not skip the
  // verification. A verification that fails after the probe passed means
  // the change would not help: exit 4, apply cannot fix it.
  return "(\n" + probe + VerdictMiddle() + step.verify + VerdictEnd() + "\n";
}

bool ParseVerdictScript(const std::string& script, std::string& probe, std::string& verify) {
  const std::string& middle = VerdictMiddle();
  const std::string_view end_text = VerdictEnd();
  const std::size_t end_size = end_text.size() + (script.ends_with('\n') ? 1 : 0);
  // The end first: it rules out most scripts without a search.
  if (script.size() < end_size ||
      script.compare(script.size() - end_size, end_text.size(), end_text) != 0) {
    return false;
  }
  // The middle starts with a newline, which a plain find would try at every
  // line of the probe; a searcher made once skips by the middle's length.
  static const std::boyer_moore_horspool_searcher searcher(middle.begin(), middle.end());
  const auto found = std::search(script.begin(), script.end(), searcher);
  const auto mid =
      found == script.end() ? std::string::npos : static_cast<std::size_t>(found - script.begin());
  if (mid == std::string::npos) {
    return false;
  }
  // Anything before the opening "(" (a prelude) belongs to both parts.
  const std::string opening = "(\n";
  const auto open = script.rfind(opening, mid);
  if (open == std::string::npos || (open != 0 && script[open - 1] != '\n')) {
    return false;
  }
  const std::string head = script.substr(0, open);
  probe = head + script.substr(open + opening.size(), mid - open - opening.size());
  const auto verify_at = mid + middle.size();
  verify = head + script.substr(verify_at, script.size() - end_size - verify_at);
  return true;
}

CommandResult VerdictResult(const CommandResult& probe, const CommandResult& verify) {
  CommandResult r = probe;
  r.out += std::string("\n") + kVerifyMarker + "\n" + verify.out;
  r.err += verify.err;
  r.exit_status = verify.exit_status == 0 ? 0 : kProbeAttention;
  r.timed_out = verify.timed_out;
  return r;
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
    case kProbeAttention:
      return ItemState::kNeedsAttention;
    case kProbeRefused:
      return ItemState::kRefused;
    default:
      return ItemState::kProbeFailed;
  }
}

ItemState Prober::Probe(const Step& step, PlanItem& item) {
  item.state = Run(step, item, VerdictScript(step), Activity::kProbe);
  return item.state;
}

bool Prober::Verify(const Step& step, PlanItem& item) {
  const std::string& script = step.verify.empty() ? step.probe : step.verify;
  return Run(step, item, script, Activity::kVerify) == ItemState::kSatisfied;
}

ItemState Prober::Run(const Step& step, PlanItem& item, const std::string& script,
                      Activity activity) {
  std::map<std::string, std::string> env = ReadOnlyEnvironment(step, item.env);
  if (!AddInputs(step, item, env, activity)) {
    return item.state;
  }
  // Only apply probes or verifies one item at a time, after changes of its
  // own run: what those changes set going (a pod, a daemon's first sweep)
  // may be waited for (the prelude's settle_tries). The batches of plan and
  // check report what is there now.
  env.insert_or_assign(std::string(kSettleVariable), "1");
  return Record(item, runner_.RunStep(item.node, step.id, activity, script, std::move(env)),
                activity);
}

ItemState Prober::Record(PlanItem& item, const CommandResult& result, Activity activity) {
  const ItemState state = StateFromProbe(result, runner_.Alive());
  item.observed = Trimmed(DecidingOutput(result.out, state)).substr(0, kMaxObserved);
  item.detail.clear();
  if (state == ItemState::kProbeFailed) {
    item.detail = result.timed_out
                      ? fmt::format("{} timed out", ToString(activity))
                      : fmt::format("{} exited {}: {}", ToString(activity), result.exit_status,
                                    ExplainFailure(result.out, result.err, 3));
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
  item.observed = runner_.redactor().Apply(why);
  item.detail.clear();
  return false;
}

void Prober::RunAll(const std::vector<Target>& all_targets, Activity activity) {
  // Items whose inputs cannot be read are settled here, without a script.
  std::vector<Target> targets;
  std::vector<BatchEntry> entries;
  for (const auto& t : all_targets) {
    std::map<std::string, std::string> env = ReadOnlyEnvironment(*t.step, t.item->env);
    if (!AddInputs(*t.step, *t.item, env, activity)) {
      continue;
    }
    // Plan and check run the same script, so they cannot disagree.
    targets.push_back(t);
    entries.push_back({t.item->id, VerdictScript(*t.step), std::move(env)});
  }
  if (targets.empty()) {
    return;
  }
  const std::string nonce = MakeNonce();
  Command command;
  command.prelude = runner_.prelude();
  command.script = BuildBatchScript("", entries, nonce);
  const CommandResult batch = runner_.Run(command);
  auto results = SplitBatchOutput(batch.out, batch.err, nonce);
  const bool alive = runner_.Alive();
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    runner_.Started(t.item->node, t.step->id, activity, entries[i].script);
    auto it = results.find(t.item->id);
    CommandResult result;
    if (it != results.end()) {
      result = std::move(it->second);
    } else {
      // Cut off: the connection dropped or the whole batch timed out here.
      result.timed_out = batch.timed_out;
      result.err = batch.err.substr(batch.err.rfind('\n', batch.err.size() - 1) + 1);
    }
    t.item->state = Record(
        *t.item, runner_.Finished(t.item->node, t.step->id, activity, std::move(result)), activity);
    if (it == results.end() && !alive) {
      t.item->state = ItemState::kUnreachable;
      t.item->detail = "connection lost";
    }
  }
}

}  // namespace gpuctl
