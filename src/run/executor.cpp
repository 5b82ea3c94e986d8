#include "gpuctl/run/executor.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpuctl/run/failure_text.h"
#include "gpuctl/run/prober.h"

namespace gpuctl {
namespace {

// Something apply cannot fix (a missing GPU) is reported, and does not hold
// back what depends on it: installing CUDA does not need all eight GPUs.
// Whether a change of `item` disrupts work on its node, so a member is
// drained before it: a reboot, a runtime restart, or any change at all on a
// node leaving the cluster (its removal steps stop what its work runs on).
bool Disrupts(const Node& node, const PlanItem& item) {
  return node.absent || item.reboot || item.restarts != kRestartsNothing;
}

bool IsDone(ItemState s) {
  return s == ItemState::kSatisfied || s == ItemState::kApplied || s == ItemState::kNeedsAttention;
}
bool IsDead(ItemState s) {
  return s == ItemState::kFailed || s == ItemState::kBlocked || s == ItemState::kUnreachable ||
         s == ItemState::kProbeFailed;
}

// /run is a tmpfs on every systemd distribution, so the marker's absence after
// reconnecting proves the node really restarted rather than refused briefly.
constexpr const char* kRebootScript =
    "touch /run/gpuctl-reboot-marker\n"
    "nohup sh -c 'sleep 1; systemctl reboot || reboot' >/dev/null 2>&1 &\n";
constexpr const char* kRebootedProbe = "test ! -e /run/gpuctl-reboot-marker\n";
constexpr std::chrono::seconds kRebootConnectTry{3};
constexpr std::chrono::seconds kRebootNoteEvery{30};

Progress ProgressOf(ItemState state) {
  if (IsDone(state)) {
    return Progress::kDone;
  }
  return IsDead(state) ? Progress::kDead : Progress::kWaiting;
}

SchedulerLimits LimitsFor(const RunContext& context, const ApplyOptions& options) {
  SchedulerLimits limits;
  limits.concurrency = context.options.concurrency;
  limits.batch = options.batch;
  limits.members_out = options.members_out;
  limits.fail_fast = options.fail_fast;
  limits.max_fail_percent = options.max_fail_percent;
  limits.total_nodes = context.inventory.nodes.size();
  limits.interrupted = options.interrupted;
  return limits;
}

}  // namespace

std::vector<ScheduledItem> ScheduledItems(const Plan& plan) {
  const std::vector<PlanItem>& plan_items = plan.items();
  // For each item found done, the items not done that it stands on, seen
  // through other done ones (computed once each; a plan is a DAG).
  std::vector<std::vector<std::size_t>> frontier(plan_items.size());
  std::vector<bool> known(plan_items.size(), false);
  const auto frontier_of = [&](auto& self, std::size_t id) -> const std::vector<std::size_t>& {
    if (!known[id]) {
      std::vector<std::size_t> found;
      for (const std::size_t dep : plan_items[id].after) {
        if (!IsDone(plan_items[dep].state)) {
          found.push_back(dep);
        } else {
          const std::vector<std::size_t>& further = self(self, dep);
          found.insert(found.end(), further.begin(), further.end());
        }
      }
      std::sort(found.begin(), found.end());
      found.erase(std::unique(found.begin(), found.end()), found.end());
      frontier[id] = std::move(found);
      known[id] = true;
    }
    return frontier[id];
  };
  std::vector<ScheduledItem> items;
  items.reserve(plan_items.size());
  for (const PlanItem& item : plan_items) {
    const Progress progress = ProgressOf(item.state);
    if (progress != Progress::kWaiting) {
      items.push_back({item.node, {}, progress});
      continue;
    }
    items.push_back({item.node, frontier_of(frontier_of, item.id), progress});
  }
  return items;
}

namespace {

// Nodes that dropped out before apply (their lock was held, say): no walker
// will finish or block their items.
std::set<std::string> FailedNodes(const RunContext& context) {
  std::set<std::string> failed;
  for (const auto& [node, error] : context.NodeErrors()) {
    failed.insert(node);
  }
  return failed;
}

}  // namespace

// "10m", "1m30s", "45s": how long a reboot wait has run and may run.
std::string Duration(std::chrono::seconds d) {
  const auto minutes = d.count() / 60;
  const auto seconds = d.count() % 60;
  if (minutes == 0) {
    return fmt::format("{}s", seconds);
  }
  return seconds == 0 ? fmt::format("{}m", minutes) : fmt::format("{}m{}s", minutes, seconds);
}

std::size_t ParseBatch(const std::string& text, std::size_t nodes) {
  if (text.empty()) {
    return 0;
  }
  std::size_t used = 0;
  const unsigned long value = std::stoul(text, &used);
  if (used == text.size()) {
    return value;
  }
  if (used + 1 == text.size() && text.back() == '%' && value > 0 && value <= 100) {
    return std::max<std::size_t>(1, nodes * value / 100);
  }
  throw std::invalid_argument("batch must be a count like 3 or a percentage like 25%");
}

Executor::Executor(RunContext& context, ApplyOptions options)
    : context_(context),
      options_(options),
      holders_(context.inventory.RoleHolders()),
      at_work_target_(std::max<std::size_t>(1, context.options.concurrency)),
      scheduler_(
          [&] {
            SchedulerLimits limits = LimitsFor(context, options);
            limits.on_wait = [this](bool waiting) { WalkerWaits(waiting); };
            return limits;
          }(),
          ScheduledItems(context.plan), FailedNodes(context)),
      drainer_(context.inventory, context.catalog, context.transport, context.reporter,
               context.redactor,
               DrainOptions{options.drain_timeout, "gpuctl apply",
                            context.options.trust_new_host_keys}) {}

void Executor::Run() {
  // Slots (not threads) bound the real work: a walker at work holds one or
  // queues for one. A walker that waits for anything else no longer counts
  // as at work, and another is started (or woken) in its place while nodes
  // are left, so every node is reached however they wait on each other. A
  // node whose next item waits for another item is parked instead (the
  // scheduler hands it back): its walker takes another node.
  std::vector<std::jthread> walkers;
  std::unique_lock lock(pool_mutex_);
  walks_.clear();
  resumed_.clear();
  for (const Node* node : context_.HealthyNodes()) {
    NodeWalk walk;
    walk.node = node;
    walks_.push_back(std::move(walk));
  }
  next_node_ = 0;
  finished_ = 0;
  while (finished_ < walks_.size()) {
    const bool work = next_node_ < walks_.size() || !resumed_.empty();
    if (at_work_ >= at_work_target_ || !work) {
      at_work_changed_.wait(lock);
      continue;
    }
    ++at_work_;  // counted for the walker it starts or wakes
    if (idle_ > wake_) {
      ++wake_;
      idle_woken_.notify_one();
    } else {
      walkers.emplace_back([this] { Walker(); });
    }
  }
  // Every node was walked to its end: idle walkers leave.
  idle_woken_.notify_all();
  lock.unlock();
  walkers.clear();  // joins
}

void Executor::Walker() {
  std::unique_lock lock(pool_mutex_);
  bool counted = true;  // Run counted this walker at work
  for (;;) {
    if (!counted) {
      idle_woken_.wait(lock, [&] { return wake_ > 0 || finished_ == walks_.size(); });
      if (wake_ == 0) {
        break;  // every node walked
      }
      --wake_;
      --idle_;
      counted = true;
      continue;
    }
    // More at work than there are slots (a wait ended), or nothing to walk
    // now (the nodes left are parked): this one rests until Run needs it,
    // rather than a thread started for every wait.
    const bool work = next_node_ < walks_.size() || !resumed_.empty();
    if (at_work_ > at_work_target_ || !work) {
      --at_work_;
      ++idle_;
      counted = false;
      at_work_changed_.notify_one();
      continue;
    }
    // A node handed back first: it started long ago, and may hold others up.
    NodeWalk* walk = nullptr;
    if (!resumed_.empty()) {
      walk = resumed_.front();
      resumed_.pop_front();
    } else {
      walk = &walks_[next_node_++];
    }
    lock.unlock();
    const bool finished = WalkNode(*walk);
    lock.lock();
    if (finished && ++finished_ == walks_.size()) {
      at_work_changed_.notify_one();  // Run stops, and sends idle walkers home
    }
  }
  --idle_;
}

void Executor::Resume(NodeWalk& walk) {
  std::lock_guard lock(pool_mutex_);
  resumed_.push_back(&walk);
  at_work_changed_.notify_one();
}

void Executor::WalkerWaits(bool waiting) {
  // A walker's waits nest (the reboot wait holds the batch's); the
  // outermost one counts.
  thread_local int depth = 0;
  if (waiting ? depth++ != 0 : --depth != 0) {
    return;
  }
  std::lock_guard lock(pool_mutex_);
  if (waiting) {
    --at_work_;
    at_work_changed_.notify_one();
  } else {
    ++at_work_;
  }
}

bool Executor::WalkNode(NodeWalk& walk) {
  const Node& node = *walk.node;
  // The walker keeps a slot from one ready item of its node to the next:
  // a node is worked on at once, not queued again after each step (with a
  // walker per node, that queue cost apply a context switch per item).
  bool holds_slot = false;
  struct SlotRelease {
    Scheduler& scheduler;
    bool& holds;
    void Now() {
      if (holds) {
        scheduler.ReturnSlot();
        holds = false;
      }
    }
    ~SlotRelease() { Now(); }
  } slot{scheduler_, holds_slot};
  bool& reboot_pending = walk.reboot_pending;
  bool& drained = walk.drained;
  std::size_t& drain_reach = walk.drain_reach;
  bool& unsettled = walk.unsettled;
  std::vector<std::size_t>& awaiting_verify = walk.awaiting_verify;
  const std::vector<std::size_t>& ids = context_.plan.ItemsOf(node.name);
  for (; walk.next < ids.size(); ++walk.next) {
    const std::size_t id = ids[walk.next];
    PlanItem& item = context_.plan.items()[id];
    if (IsDone(item.state) || IsDead(item.state)) {
      continue;
    }
    const Step& step = *context_.catalog.Find(item.step);
    // Reboot once for a run of reboot-needing steps (nouveau then driver),
    // not once each: the next step would only be verified after a reboot anyway.
    if (reboot_pending && !step.reboot) {
      slot.Now();  // a reboot's wait is not work on the node
      if (!RebootAndVerify(node, awaiting_verify)) {
        unsettled = true;
        break;
      }
      reboot_pending = false;
    }
    // Back in service before anything else: the node's next item may wait
    // for another node, which may wait for this one's turn to be drained.
    if (drained && !reboot_pending && !node.absent &&
        !ReturnToService(node, drain_reach, drained)) {
      break;
    }
    // Parked, the node comes back here (walk.next) once what it waits for
    // settled: the steps above find nothing left to do then.
    if (walk.reached_item != id) {
      walk.reached = ReachedNodes(node, item);
      walk.reached_item = id;
    }
    const Admission::Verdict verdict =
        WaitToStart(item, walk.reached, holds_slot, [this, &walk] { Resume(walk); });
    if (verdict == Admission::Verdict::kParked) {
      return false;
    }
    if (verdict != Admission::Verdict::kGo) {
      continue;  // blocked; later items may still depend only on done ones
    }
    if (!drained && Disrupts(node, item)) {
      if (!TakeOutOfService(node, item, holds_slot, drained)) {
        break;
      }
      drain_reach = id;
    }
    const bool ran = RunItem(node, item, reboot_pending, holds_slot);
    if (!drained || drain_reach != id) {
      scheduler_.ReleaseReach(id);
    }
    if (!ran) {
      break;
    }
    if (reboot_pending) {
      awaiting_verify.push_back(id);
      // Found already true on its second probe, it is done for everyone.
      if (!IsDone(item.state)) {
        scheduler_.Settle(id, Progress::kChangedUnproven);
      }
    }
  }
  slot.Now();
  if (reboot_pending && !unsettled && !context_.IsFailed(node.name)) {
    unsettled = !RebootAndVerify(node, awaiting_verify);
  }
  if (drained) {
    if (node.absent) {
      // Leaving the cluster: its removal steps took it out for good, and
      // the control plane forgets it next (k8s.forget-nodes, slurm.config).
      context_.reporter.Note(node.name, "left drained: it is leaving the cluster");
      scheduler_.ReleaseReach(drain_reach);
      scheduler_.LeaveOutOfService(node.name);
    } else if (unsettled || context_.IsFailed(node.name)) {
      // Left out of service on purpose: whatever failed may be why its
      // work would fail too. The admin resumes it once it is fixed.
      context_.reporter.Note(node.name,
                             fmt::format("left drained: resume it once fixed (the drain ran on {})",
                                         drainer_.RunsOn(node)));
      scheduler_.ReleaseReach(drain_reach);
      scheduler_.LeaveOutOfService(node.name);
    } else {
      ReturnToService(node, drain_reach, drained);
    }
  }
  // Whatever this walker did not reach is blocked, so dependents stop waiting.
  std::vector<std::size_t> blocked;
  for (const std::size_t id : context_.plan.ItemsOf(node.name)) {
    PlanItem& item = context_.plan.items()[id];
    if (!IsDone(item.state) && !IsDead(item.state)) {
      const bool waiting_reboot =
          std::find(awaiting_verify.begin(), awaiting_verify.end(), id) != awaiting_verify.end();
      item.state = ItemState::kBlocked;
      if (item.detail.empty() || waiting_reboot) {
        item.detail = scheduler_.Stopping() ? "run stopped before this step"
                                            : "an earlier step on this node failed";
      }
      context_.reporter.ItemUpdated(item);
      blocked.push_back(id);
    }
  }
  scheduler_.Settle(blocked, Progress::kDead);
  return true;
}

std::vector<std::string> Executor::ReachedNodes(const Node& node, const PlanItem& item) const {
  // Most items reach no other node (their dependencies are on their own
  // node): only the others' names are copied, then sorted once. A set built
  // per item was a twentieth of a 10,000-node apply.
  std::vector<std::string> reached;
  const auto add = [&](const std::string& other) {
    if (other != item.node) {
      reached.push_back(other);
    }
  };
  for (const std::size_t dep : item.after) {
    add(context_.plan.items()[dep].node);
  }
  for (const StepInput& input : context_.catalog.Find(item.step)->inputs) {
    auto held = holders_.find(input.from);
    if (held == holders_.end()) {
      continue;
    }
    for (const Node* source : held->second) {
      add(source->name);
      if (!input.each) {
        break;  // read from the first node holding the role
      }
    }
  }
  // A change that disrupts its node, if that node is a member, needs the
  // node its drain runs on up for the drain and for the resume: the item
  // never starts while that node is down for a reboot, and that node does
  // not go down under it (TakeOutOfService holds this reach until the resume).
  if (options_.drain) {
    if (Disrupts(node, item)) {
      if (std::string holder = drainer_.RunsOn(node); !holder.empty()) {
        add(holder);
      }
    }
  }
  std::sort(reached.begin(), reached.end());
  reached.erase(std::unique(reached.begin(), reached.end()), reached.end());
  return reached;
}

Admission::Verdict Executor::WaitToStart(PlanItem& item, const std::vector<std::string>& reached,
                                         bool& holds_slot, std::function<void()> resume) {
  const Admission admission =
      scheduler_.WaitToStart(item.id, reached, holds_slot, std::move(resume));
  const auto blocker = [&]() -> const PlanItem& {
    return context_.plan.items()[admission.blocker];
  };
  switch (admission.verdict) {
    case Admission::Verdict::kGo:
    case Admission::Verdict::kParked:
      return admission.verdict;
    case Admission::Verdict::kDeadItem:
      item.detail = fmt::format("{} on {} did not finish", blocker().step, blocker().node);
      break;
    case Admission::Verdict::kFailedNode:
      item.detail =
          fmt::format("{} on {} cannot run: that node failed", blocker().step, blocker().node);
      break;
    case Admission::Verdict::kStopped:
      item.detail = "run stopped before this step";
      break;
  }
  item.state = ItemState::kBlocked;
  context_.reporter.ItemUpdated(item);
  scheduler_.Settle(item.id, Progress::kDead);
  return admission.verdict;
}

bool Executor::RunItem(const Node& node, PlanItem& item, bool& reboot_pending, bool& holds_slot) {
  if (!holds_slot) {
    if (!scheduler_.TakeSlot()) {
      return false;  // stopping: the walker blocks what is left
    }
    holds_slot = true;
  }

  Connection* connection = context_.ConnectionTo(node.name);
  if (connection == nullptr) {
    Finish(item, ItemState::kFailed, "no connection to the node");
    FailNode(node, "no connection to the node");
    return false;
  }
  const Step& step = *context_.catalog.Find(item.step);
  ScriptRunner runner = context_.RunnerFor(*connection);
  Prober prober(runner, &context_.inputs, InputUse::kVerify);
  // A step whose outcome was unknown at plan time is probed again now that
  // what it waited for has run: it may need nothing.
  // Probed on a copy: the state is published only through Finish, which
  // also tells the scheduler.
  if (item.state == ItemState::kKnownAfterApply) {
    PlanItem probed = item;
    const ItemState now = prober.Probe(step, probed);
    item.observed = probed.observed;
    if (now == ItemState::kSatisfied || now == ItemState::kNeedsAttention) {
      Finish(item, now, "");
      return true;
    }
    if (now != ItemState::kNeedsChange && now != ItemState::kKnownAfterApply) {
      // A refusal (the preflight) says why in its line, not on stderr.
      const std::string why =
          now == ItemState::kRefused && !probed.observed.empty()
              ? "refused: " + probed.observed.substr(0, probed.observed.find('\n'))
              : probed.detail;
      Finish(item, ItemState::kFailed, why);
      FailNode(node, fmt::format("{}: {}", item.step, why));
      return false;
    }
  }
  const std::string* change = step.ChangeFor(node.os.family);
  if (change == nullptr) {
    Finish(item, ItemState::kFailed, "no change defined for " + ToString(node.os.family));
    FailNode(node, item.step + ": no change for this OS family");
    return false;
  }
  std::map<std::string, std::string> env = PlainEnvironment(item.env);
  if (std::string why; !context_.inputs.Resolve(step, InputUse::kChange, env, why)) {
    Finish(item, ItemState::kFailed, why);
    FailNode(node, fmt::format("{}: {}", item.step, why));
    return false;
  }
  const CommandResult result =
      runner.RunStep(node.name, item.step, Activity::kChange, *change, std::move(env));
  context_.inputs.SourceChanged(node.name);  // even a failed change may have done part
  if (result.exit_status != 0) {
    const std::string why = result.timed_out
                                ? "change timed out"
                                : fmt::format("change exited {}: {}", result.exit_status,
                                              ExplainFailure(result.out, result.err, 6));
    Finish(item, ItemState::kFailed, why);
    FailNode(node, fmt::format("{}: {}", item.step, why));
    return false;
  }
  if (step.reboot) {
    // Recorded on the node until it reboots, so a run that never gets to the
    // reboot (Ctrl-C, a lost node) leaves the next plan knowing it is owed.
    Command mark;
    mark.script = PendingRebootMark(item.step);
    mark.timeout = std::chrono::seconds(30);
    if (const CommandResult marked = runner.Run(mark); marked.exit_status != 0) {
      spdlog::warn("{}: cannot record the pending reboot for {}: {}", node.name, item.step,
                   Tail(marked.err, 1));
    }
    reboot_pending = true;
    return true;
  }
  if (!prober.Verify(step, item)) {
    const std::string why =
        "verification failed: " + (item.detail.empty() ? Tail(item.observed, 3) : item.detail);
    Finish(item, ItemState::kFailed, why);
    FailNode(node, fmt::format("{}: {}", item.step, why));
    return false;
  }
  Finish(item, ItemState::kApplied, "");
  return true;
}

bool Executor::RebootAndVerify(const Node& node, std::vector<std::size_t>& awaiting_verify) {
  // Waiting for the batch and for the node to come back is not work: another
  // walker takes a node meanwhile (minutes, on real hardware).
  struct Waiting {
    Executor& executor;
    bool over = false;
    void End() {
      if (!over) {
        over = true;
        executor.WalkerWaits(false);
      }
    }
    ~Waiting() { End(); }
  } waiting{*this};
  WalkerWaits(true);
  if (!scheduler_.EnterRebootBatch(node.name)) {
    // Interrupted before this node's turn: its reboot never starts. What
    // changed stays on disk; the next apply's probe sees the reboot pending.
    const std::string why =
        "changed, but its reboot was cancelled (interrupted): the next apply reboots the node";
    context_.reporter.Note(node.name, "reboot cancelled (interrupted)");
    for (const std::size_t id : awaiting_verify) {
      Finish(context_.plan.items()[id], ItemState::kBlocked, why);
    }
    awaiting_verify.clear();
    return false;
  }
  struct BatchLeave {
    Scheduler& scheduler;
    const std::string& node;
    ~BatchLeave() { scheduler.LeaveRebootBatch(node); }
  } leave{scheduler_, node.name};

  context_.reporter.Note(node.name, "rebooting");
  context_.reporter.Note(node.name, fmt::format("waiting up to {} for it to come back "
                                                "(--reboot-timeout)",
                                                Duration(options_.reboot_timeout)));
  if (Connection* connection = context_.ConnectionTo(node.name)) {
    Command reboot;
    reboot.script = kRebootScript;
    reboot.timeout = std::chrono::seconds(30);
    context_.RunnerFor(*connection).Run(reboot);
  }
  context_.DropConnection(node.name);
  context_.inputs.SourceChanged(node.name);
  if (std::string last_error; !WaitForReboot(node, last_error)) {
    // The wait also ends when the run stops (Ctrl-C, --fail-fast): the node
    // is then not failed, only not yet seen back.
    const bool interrupted = scheduler_.Stopping();
    const std::string why =
        interrupted ? "rebooting, not yet back when the run stopped: the next apply verifies it"
                    : fmt::format("did not come back from reboot within {}: {}",
                                  Duration(options_.reboot_timeout), last_error);
    for (const std::size_t id : awaiting_verify) {
      Finish(context_.plan.items()[id], interrupted ? ItemState::kBlocked : ItemState::kFailed,
             why);
    }
    awaiting_verify.clear();
    if (interrupted) {
      context_.reporter.Note(node.name, "rebooting, not yet back (the run stopped)");
    } else {
      FailNode(node, why);
    }
    return false;
  }
  waiting.End();
  Connection* connection = context_.ConnectionTo(node.name);
  context_.reporter.Note(node.name, "back after reboot");
  ScriptRunner runner = context_.RunnerFor(*connection);
  Prober prober(runner, &context_.inputs, InputUse::kVerify);
  bool all_ok = true;
  for (const std::size_t id : awaiting_verify) {
    PlanItem& item = context_.plan.items()[id];
    const Step& step = *context_.catalog.Find(item.step);
    if (prober.Verify(step, item)) {
      Finish(item, ItemState::kApplied, "");
    } else {
      const std::string why = "verification after reboot failed: " +
                              (item.detail.empty() ? Tail(item.observed, 3) : item.detail);
      Finish(item, ItemState::kFailed, why);
      if (all_ok) {
        FailNode(node, fmt::format("{}: {}", item.step, why));
      }
      all_ok = false;
    }
  }
  awaiting_verify.clear();
  return all_ok;
}

bool Executor::WaitForReboot(const Node& node, std::string& last_error) {
  Endpoint endpoint = Endpoint::For(node);
  endpoint.trust_on_first_use = context_.options.trust_new_host_keys;
  // Short tries: an interrupt is noticed between them, so Ctrl-C ends the
  // wait within one try rather than after the whole timeout.
  endpoint.connect_timeout = std::min(endpoint.connect_timeout, kRebootConnectTry);
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options_.reboot_timeout;
  auto next_note = start + kRebootNoteEvery;
  last_error = "no answer";
  // Poll until the node answers and its /run marker is gone. The pause
  // between tries is pacing for a remote machine, not synchronisation.
  while (!scheduler_.Stopping() && std::chrono::steady_clock::now() < deadline) {
    try {
      auto connection = context_.transport.Connect(endpoint);
      Command check;
      check.script = kRebootedProbe;
      check.timeout = std::chrono::seconds(10);
      if (context_.RunnerFor(*connection).Run(check).exit_status == 0) {
        context_.SetConnection(node.name, std::move(connection));
        return true;
      }
      last_error = "node still up: the reboot has not happened yet";
    } catch (const TransportError& e) {
      last_error = e.what();
      spdlog::debug("{}: waiting for the node after its reboot: {}", node.name, last_error);
      if (e.kind() == ConnectFailure::kHostKeyChanged || e.kind() == ConnectFailure::kAuth) {
        break;  // waiting will not fix this
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_note) {
      next_note = now + kRebootNoteEvery;
      context_.reporter.Note(
          node.name,
          fmt::format("still rebooting after {} (gives up at {})",
                      Duration(std::chrono::duration_cast<std::chrono::seconds>(now - start)),
                      Duration(options_.reboot_timeout)));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return false;
}

bool Executor::TakeOutOfService(const Node& node, PlanItem& item, bool& holds_slot, bool& drained) {
  if (!options_.drain || !drainer_.Applies(node)) {
    return true;
  }
  Connection* connection = context_.ConnectionTo(node.name);
  if (connection == nullptr) {
    return true;  // RunItem reports the lost connection
  }
  ScriptRunner runner = context_.RunnerFor(*connection);
  std::string why;
  switch (drainer_.IsMember(node, runner, why)) {
    case Drainer::Membership::kNotMember:
      return true;
    case Drainer::Membership::kMember:
      break;
    case Drainer::Membership::kUnknown:
      // Disrupting a node that may be running work, unannounced, is what
      // draining is for: refuse rather than guess.
      scheduler_.ReleaseReach(item.id);
      Finish(item, ItemState::kFailed, why + "; nothing was changed");
      FailNode(node, fmt::format("{}: {}", item.step, why));
      return false;
  }
  // Waiting for its turn is not work: the slot and the reach go back, so
  // that nothing waits on this node while it waits on the others.
  scheduler_.ReleaseReach(item.id);
  if (holds_slot) {
    scheduler_.ReturnSlot();
    holds_slot = false;
  }
  if (!scheduler_.EnterOutOfService(node.name)) {
    Finish(item, ItemState::kBlocked, "run stopped before this step");
    return false;
  }
  // Admitted again, so the node the drain runs on is up and stays up until
  // the resume (a node it reaches may have gone down meanwhile).
  if (WaitToStart(item, ReachedNodes(node, item), holds_slot) != Admission::Verdict::kGo) {
    scheduler_.LeaveOutOfService(node.name);
    return false;
  }
  context_.reporter.Note(
      node.name, fmt::format("draining on {} before {} (--drain-timeout {})", drainer_.RunsOn(node),
                             item.step, Duration(options_.drain_timeout)));
  if (!drainer_.DrainNode(node, why)) {
    // Put back what the drain did (a cordon): nothing was disrupted, and
    // the node's work goes on while the admin looks.
    std::string resume_why;
    const bool resumed = drainer_.ResumeNode(node, resume_why);
    scheduler_.ReleaseReach(item.id);
    scheduler_.LeaveOutOfService(node.name);
    const std::string detail = fmt::format(
        "not drained within the drain's limits, so not changed: {}{}", why,
        resumed ? "; the node is back in service" : "; and resuming it failed: " + resume_why);
    Finish(item, ItemState::kFailed, detail);
    FailNode(node, fmt::format("{}: {}", item.step, detail));
    return false;
  }
  drained = true;
  context_.reporter.Note(node.name, "drained");
  return true;
}

bool Executor::ReturnToService(const Node& node, std::size_t drain_reach, bool& drained) {
  std::string why;
  const bool resumed = drainer_.ResumeNode(node, why);
  drained = false;
  scheduler_.ReleaseReach(drain_reach);
  scheduler_.LeaveOutOfService(node.name);
  if (!resumed) {
    FailNode(node, fmt::format("changed and verified, but not put back in service on {}: {}",
                               drainer_.RunsOn(node), why));
    return false;
  }
  context_.reporter.Note(node.name, "back in service");
  return true;
}

void Executor::Finish(PlanItem& item, ItemState state, const std::string& detail) {
  item.state = state;
  item.detail = context_.redactor.Apply(detail);
  context_.reporter.ItemUpdated(item);
  scheduler_.Settle(item.id, ProgressOf(state));
}

void Executor::FailNode(const Node& node, const std::string& error) {
  context_.FailNode(node.name, error);
  scheduler_.NodeFailed(node.name);
  // Reported only once the stop is in force: whoever hears of the failure
  // (a watching script, a test) can rely on nothing new starting after it.
  context_.reporter.NodeFailed(node.name, context_.redactor.Apply(error));
}

}  // namespace gpuctl
