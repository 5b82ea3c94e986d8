#include "gpuctl/action/apply_action.h"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "gpuctl/action/reset.h"
#include "gpuctl/run/drift.h"
#include "gpuctl/run/run_history.h"
#include "gpuctl/run/script_trace.h"
#include "gpuctl/util/input_file.h"

namespace gpuctl {
namespace {

// A file that cannot be read is "not a plan", so the inventory loader reports
// why (input_file.h), once.
bool LooksLikeSavedPlan(const std::string& path) {
  std::string why;
  const auto head = ReadInputPrefix(path, 4096, why);
  const std::size_t first = head ? head->find_first_not_of(" \t\r\n") : std::string::npos;
  return first != std::string::npos && (*head)[first] == '{';
}

// Written into each node's lock, so whoever finds it held knows whom to ask.
std::string ThisHolder() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const passwd* account = getpwuid(geteuid());
  const char* user = account != nullptr ? account->pw_name : std::getenv("USER");
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return fmt::format("user={} host={} pid={} started={:%Y-%m-%dT%H:%M:%SZ}",
                     user != nullptr ? user : "?", host, getpid(), now);
}

}  // namespace

std::optional<ApplyTarget> ReadApplyTarget(const std::string& path, std::ostream& err) {
  ApplyTarget target{path, path, std::nullopt};
  if (!LooksLikeSavedPlan(path)) {
    return target;
  }
  std::string why;
  const auto text = ReadInputFile(path, kMaxSavedPlanBytes, why);
  if (!text) {
    err << path << ": error: " << why << '\n';
    return std::nullopt;
  }
  try {
    target.saved = PlanFromJson(nlohmann::json::parse(*text), path);
  } catch (const LoadError& e) {
    err << e.what();
    return std::nullopt;
  } catch (const nlohmann::json::exception& e) {
    err << path << ": error: not valid JSON: " << e.what() << '\n';
    return std::nullopt;
  }
  target.inventory_path = target.saved->header.inventory_path;
  return target;
}

std::string SavedPlanRefusal(const ApplyTarget& target, const Spec& spec) {
  if (!target.saved) {
    return "";
  }
  if (target.saved->header.inventory_digest != spec.inventory_digest) {
    return fmt::format("refusing {}: {} changed since the plan was saved; run plan again",
                       target.path, target.inventory_path);
  }
  if (target.saved->header.catalog_digest != spec.catalog.Digest()) {
    return fmt::format(
        "refusing {}: the step catalog changed since the plan was saved; run plan again",
        target.path);
  }
  return "";
}

std::string DefaultRunDir(const std::string& cluster) {
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return (std::filesystem::path(StateDir()) / cluster / "runs" /
          fmt::format("{:%Y%m%dT%H%M%SZ}-{}", now, getpid()))
      .string();
}

ApplyAction::ApplyAction(Spec& spec, const ApplyTarget& target, Transport& transport,
                         Reporter& progress, ApplySettings settings)
    : spec_(spec),
      target_(target),
      settings_(std::move(settings)),
      run_dir_(settings_.run_dir.empty() ? DefaultRunDir(spec.inventory.cluster)
                                         : settings_.run_dir),
      // The previous run is looked up before this one's directory exists.
      previous_run_(LatestRunDir(std::filesystem::path(run_dir_).parent_path().string())),
      journal_(run_dir_),
      context_(spec.inventory, spec.catalog, plan_, transport, reporter_, settings_.run) {
  reporter_.Add(&progress);
  reporter_.Add(&journal_);
  TraceRedactor(transport, context_.redactor);
  journal_.RunStarted(context_.redactor.Apply(ProcessCommandLine()), target_.path);
}

ApplyAction::~ApplyAction() {
  try {
    Finish();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

const ApplyAction::Prepared& ApplyAction::Prepare() {
  if (prepared_once_) {
    return prepared_;
  }
  prepared_once_ = true;
  if (!previous_run_.empty()) {
    for (const auto& [node, step] : UnfinishedSteps(previous_run_ + "/journal.jsonl")) {
      reporter_.Note(node, fmt::format("the previous run stopped during {}; its probe decides "
                                       "now whether it still needs to run",
                                       step));
    }
  }
  pipeline_.Add(MakeReachPhase(spec_.reach))
      .Add(MakeConnectPhase())
      .Add(MakeIdentifyPhase())
      .Add(MakePlanPhase(spec_.inventory))
      .Add(MakeLimitPhase(spec_.targets))
      .Add(MakeResetScopePhase(spec_.reset_nodes))
      .Add(MakeLockPhase(std::filesystem::path(run_dir_).filename().string(),
                         settings_.holder.empty() ? ThisHolder() : settings_.holder,
                         settings_.break_lock))
      .Add(MakeProbePhase())
      .Add(MakeLimitRefusalPhase(spec_.targets, true));
  pipeline_.Start(context_);
  if (target_.saved) {
    // An `os: auto` node reinstalled with another OS keeps the inventory's
    // digest; its recorded OS is what tells.
    prepared_.drift = CompareNodeOs(target_.saved->header.node_os, spec_.inventory);
    for (auto& d : CompareWithSaved(target_.saved->plan, plan_)) {
      prepared_.drift.push_back(std::move(d));
    }
  }
  const PlanSummary summary = plan_.Summarize();
  prepared_.has_changes = summary.Pending();
  prepared_.refused = summary.refused;
  return prepared_;
}

void ApplyAction::Apply() {
  if (!prepared_once_ || !prepared_.drift.empty() || prepared_.refused > 0 || finished_) {
    throw std::logic_error("ApplyAction::Apply needs a Prepare() with no drift or refusal, once");
  }
  applied_ = true;
  pipeline_.Add(MakeApplyPhase(settings_.executor, &max_reboots_));
  pipeline_.Start(context_);
}

void ApplyAction::Finish() {
  if (finished_) {
    return;
  }
  finished_ = true;
  pipeline_.CleanUp(context_);
  // Nodes that went through a reboot that proved itself: a reboot step applied.
  std::set<std::string> rebooted;
  for (const PlanItem& item : plan_.items()) {
    const Step* step = spec_.catalog.Find(item.step);
    if (item.state == ItemState::kApplied && step != nullptr && step->reboot) {
      rebooted.insert(item.node);
    }
  }
  journal_.RunFinished(
      Outcome(), plan_.Summarize(), rebooted.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  journal_.Flush();
  std::ofstream out(std::filesystem::path(run_dir_) / "plan.json");
  WritePlanJson(out, plan_, HeaderFor(spec_), context_.NodeErrors());
}

std::string ApplyAction::Outcome() const {
  if (settings_.executor.interrupted != nullptr && settings_.executor.interrupted->load()) {
    return "interrupted";
  }
  if (!prepared_once_) {
    return "not started";
  }
  if (!prepared_.drift.empty()) {
    return "refused (saved plan drifted)";
  }
  if (!applied_ && prepared_.refused > 0) {
    return "refused (preflight)";
  }
  const bool left_out = !context_.NodeErrors().empty();
  if (!applied_) {
    if (prepared_.has_changes) {
      return "not confirmed";
    }
    return left_out ? "incomplete" : "nothing to change";
  }
  const PlanSummary summary = plan_.Summarize();
  if (summary.failed > 0) {
    return "failed";
  }
  return left_out || summary.blocked > 0 ? "incomplete" : "applied";
}

std::map<std::string, std::string> ApplyAction::NodeErrors() const { return context_.NodeErrors(); }

}  // namespace gpuctl
