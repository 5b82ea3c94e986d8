#include "gpuctl/run/scheduler.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace gpuctl {

Scheduler::Scheduler(SchedulerLimits limits, std::vector<ScheduledItem> items,
                     std::set<std::string> failed_nodes)
    : limits_(limits),
      items_(std::move(items)),
      failed_nodes_(std::move(failed_nodes)),
      slots_free_(limits.concurrency) {}

namespace {

// Counts a call as waiting while it is held, and says so to AwaitWaiting.
class HeldWaiting {
 public:
  HeldWaiting(std::size_t& waiting, std::condition_variable& changed) : waiting_(waiting) {
    ++waiting_;
    changed.notify_all();
  }
  ~HeldWaiting() { --waiting_; }
  HeldWaiting(const HeldWaiting&) = delete;
  HeldWaiting& operator=(const HeldWaiting&) = delete;

 private:
  std::size_t& waiting_;
};

}  // namespace

template <typename Predicate>
void Scheduler::WaitUntil(std::unique_lock<std::mutex>& lock, Predicate ready) {
  if (ready()) {
    return;
  }
  const HeldWaiting held(waiting_, changed_);
  // Woken by every state change; the timeout is only for the interrupt flag,
  // which a signal handler sets without being able to notify.
  while (!changed_.wait_for(lock, std::chrono::milliseconds(200), ready)) {
    if (Stopping()) {
      ready();  // let the predicate record why, as it does when woken
      return;
    }
  }
}

bool Scheduler::AwaitWaiting(std::size_t count, std::chrono::seconds limit) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, limit, [&] { return waiting_ >= count; });
}

bool Scheduler::Stopping() const {
  return stop_all_ || (limits_.interrupted != nullptr && limits_.interrupted->load());
}

bool Scheduler::Decided(std::size_t item, const std::vector<std::string>& reached,
                        Admission& admission) const {
  if (Stopping()) {
    admission.verdict = Admission::Verdict::kStopped;
    return true;
  }
  const ScheduledItem& waiter = items_[item];
  for (const std::size_t dep : waiter.after) {
    const ScheduledItem& needed = items_[dep];
    if (needed.progress == Progress::kDead) {
      admission = {Admission::Verdict::kDeadItem, dep};
      return true;
    }
    // A node that dropped out (before apply: its lock was held, say) has no
    // walker left to finish or block its items.
    if (needed.progress != Progress::kDone && failed_nodes_.count(needed.node) != 0) {
      admission = {Admission::Verdict::kFailedNode, dep};
      return true;
    }
    // Changed on this node and waiting for the shared reboot: done as far as
    // ordering goes, so the next reboot-needing step can join that reboot.
    // Other nodes wait until the reboot has proven it.
    const bool changed_here =
        needed.progress == Progress::kChangedUnproven && needed.node == waiter.node;
    if (needed.progress != Progress::kDone && !changed_here) {
      return false;
    }
  }
  if (std::any_of(reached.begin(), reached.end(),
                  [&](const std::string& node) { return down_.count(node) != 0; })) {
    return false;
  }
  admission.verdict = Admission::Verdict::kGo;
  return true;
}

Admission Scheduler::WaitToStart(std::size_t item, const std::vector<std::string>& reached) {
  std::unique_lock lock(mutex_);
  Admission admission;
  WaitUntil(lock, [&] { return Decided(item, reached, admission); });
  // An interrupt may land after the decision; a blocker found still wins.
  if (admission.verdict == Admission::Verdict::kGo && Stopping()) {
    admission.verdict = Admission::Verdict::kStopped;
  }
  if (admission.verdict == Admission::Verdict::kGo) {
    for (const std::string& node : reached) {
      ++reached_by_[node];
    }
    reaching_[item] = reached;
  }
  return admission;
}

void Scheduler::ReleaseReach(std::size_t item) {
  {
    std::lock_guard lock(mutex_);
    const auto held = reaching_.find(item);
    if (held == reaching_.end()) {
      return;
    }
    for (const std::string& node : held->second) {
      --reached_by_[node];
    }
    reaching_.erase(held);
  }
  changed_.notify_all();
}

bool Scheduler::TakeSlot() {
  std::unique_lock lock(mutex_);
  WaitUntil(lock, [&] { return slots_free_ > 0 || Stopping(); });
  if (Stopping()) {
    return false;
  }
  --slots_free_;
  return true;
}

void Scheduler::ReturnSlot() {
  {
    std::lock_guard lock(mutex_);
    ++slots_free_;
  }
  changed_.notify_all();
}

void Scheduler::Settle(std::size_t item, Progress progress) {
  Settle(std::vector<std::size_t>{item}, progress);
}

void Scheduler::Settle(const std::vector<std::size_t>& items, Progress progress) {
  {
    std::lock_guard lock(mutex_);
    for (const std::size_t item : items) {
      items_[item].progress = progress;
    }
  }
  changed_.notify_all();
}

bool Scheduler::EnterRebootBatch(const std::string& node) {
  std::unique_lock lock(mutex_);
  const auto unreached = [&] { return reached_by_[node] == 0; };
  if (limits_.batch != 0) {
    WaitUntil(lock, [&] { return batch_open_ && batch_members_ < limits_.batch && unreached(); });
    // Woken by a stop (not by room in the batch): this reboot has not
    // started, so it never does; --batch holds under Ctrl-C.
    if (Stopping()) {
      return false;
    }
    ++batch_members_;
    if (batch_members_ == limits_.batch) {
      batch_open_ = false;  // full: the next batch waits for all of this one
    }
  }
  // Even when the run is stopping: a step reaching this node is in flight,
  // and the reboot must not cut it off. Such steps end on their own.
  if (!unreached()) {
    const HeldWaiting held(waiting_, changed_);
    changed_.wait(lock, unreached);
  }
  if (Stopping()) {
    return false;
  }
  down_.insert(node);
  ++rebooting_;
  max_rebooting_ = std::max(max_rebooting_, rebooting_);
  return true;
}

void Scheduler::LeaveRebootBatch(const std::string& node) {
  {
    std::lock_guard lock(mutex_);
    down_.erase(node);
    --rebooting_;
    if (limits_.batch != 0 && rebooting_ == 0) {
      batch_members_ = 0;
      batch_open_ = true;
    }
  }
  changed_.notify_all();
}

std::size_t Scheduler::MaxConcurrentReboots() const {
  std::lock_guard lock(mutex_);
  return max_rebooting_;
}

void Scheduler::NodeFailed(const std::string& node) {
  {
    std::lock_guard lock(mutex_);
    failed_nodes_.insert(node);
    ++nodes_failed_in_run_;
    if (limits_.fail_fast ||
        nodes_failed_in_run_ * 100 >
            static_cast<std::size_t>(limits_.max_fail_percent) * limits_.total_nodes) {
      stop_all_ = true;
    }
  }
  changed_.notify_all();
}

void Scheduler::StopAll() {
  {
    std::lock_guard lock(mutex_);
    stop_all_ = true;
  }
  changed_.notify_all();
}

}  // namespace gpuctl
