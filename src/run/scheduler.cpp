#include "gpuctl/run/scheduler.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

namespace gpuctl {

struct Scheduler::Waiter {
  std::condition_variable woken;
  // What it waits for now, as the predicate last said (at most one).
  std::optional<std::size_t> item;
  std::string node;
  bool slot = false;
  bool batch = false;
  bool service = false;  // a member's turn to be drained
  // Where it sits in on_item_, on_node_, on_slot_, on_batch_ or on_service_,
  // while it is there.
  std::optional<std::multimap<std::size_t, Waiter*>::iterator> on_item;
  std::optional<std::multimap<std::string, Waiter*>::iterator> on_node;
  std::optional<std::list<Waiter*>::iterator> queued;
  void Clear() {
    item.reset();
    node.clear();
    slot = batch = service = false;
  }
};

Scheduler::Scheduler(SchedulerLimits limits, std::vector<ScheduledItem> items,
                     std::set<std::string> failed_nodes)
    : limits_(limits),
      items_(std::move(items)),
      deps_done_(items_.size(), 0),
      failed_nodes_(std::move(failed_nodes)),
      slots_free_(limits.concurrency) {
  if (limits_.interrupted != nullptr) {
    watch_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      // Polling a flag is the only way to hear a signal handler; the pause
      // is that poll's period, not synchronisation.
      while (!watch_done_) {
        if (limits_.interrupted->load()) {
          WakeAll();
        }
        watch_changed_.wait_for(lock, std::chrono::milliseconds(200));
      }
    });
  }
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    watch_done_ = true;
  }
  watch_changed_.notify_all();
  if (watch_.joinable()) {
    watch_.join();
  }
}

void Scheduler::Register(Waiter& w) {
  if (w.item) {
    w.on_item = on_item_.emplace(*w.item, &w);
  } else if (!w.node.empty()) {
    w.on_node = on_node_.emplace(w.node, &w);
  } else if (w.slot) {
    w.queued = on_slot_.insert(on_slot_.end(), &w);
  } else if (w.batch) {
    w.queued = on_batch_.insert(on_batch_.end(), &w);
  } else if (w.service) {
    w.queued = on_service_.insert(on_service_.end(), &w);
  }
}

void Scheduler::Unregister(Waiter& w) {
  if (w.on_item) {
    on_item_.erase(*w.on_item);
    w.on_item.reset();
  }
  if (w.on_node) {
    on_node_.erase(*w.on_node);
    w.on_node.reset();
  }
  if (w.queued) {
    (w.slot ? on_slot_ : w.batch ? on_batch_ : on_service_).erase(*w.queued);
    w.queued.reset();
  }
  w.Clear();
}

void Scheduler::WakeItem(std::size_t item) {
  auto [first, last] = on_item_.equal_range(item);
  for (auto it = first; it != last; ++it) {
    it->second->woken.notify_one();
  }
  const auto [parked_first, parked_last] = parked_.equal_range(item);
  ResumeParked(parked_first, parked_last);
}

void Scheduler::ResumeParked(std::multimap<std::size_t, std::function<void()>>::iterator first,
                             std::multimap<std::size_t, std::function<void()>>::iterator last) {
  while (first != last) {
    first->second();
    first = parked_.erase(first);
    --waiting_;
  }
}

void Scheduler::WakeNode(const std::string& node) {
  auto [first, last] = on_node_.equal_range(node);
  for (auto it = first; it != last; ++it) {
    it->second->woken.notify_one();
  }
}

void Scheduler::WakeAll() {
  for (Waiter* w : held_) {
    w->woken.notify_one();
  }
  ResumeParked(parked_.begin(), parked_.end());
}

template <typename Predicate>
void Scheduler::WaitUntil(std::unique_lock<std::mutex>& lock, Waiter& waiter, Predicate ready) {
  if (ready()) {
    return;
  }
  // A call waits for one kind of thing throughout: a slot, or not.
  const bool told = !waiter.slot && limits_.on_wait;
  if (told) {
    limits_.on_wait(true);
  }
  held_.insert(&waiter);
  ++waiting_;
  waiting_changed_.notify_all();
  for (;;) {
    Register(waiter);
    waiter.woken.wait(lock);
    Unregister(waiter);
    if (ready()) {
      break;
    }
    if (Stopping()) {
      ready();  // let the predicate record why, as it does when woken
      break;
    }
  }
  --waiting_;
  held_.erase(&waiter);
  if (told) {
    limits_.on_wait(false);
  }
}

bool Scheduler::AwaitWaiting(std::size_t count, std::chrono::seconds limit) {
  std::unique_lock lock(mutex_);
  return waiting_changed_.wait_for(lock, limit, [&] { return waiting_ >= count; });
}

bool Scheduler::Stopping() const {
  return stop_all_ || (limits_.interrupted != nullptr && limits_.interrupted->load());
}

bool Scheduler::Decided(std::size_t item, const std::vector<std::string>& reached,
                        Admission& admission, Waiter& waiter) {
  if (Stopping()) {
    admission.verdict = Admission::Verdict::kStopped;
    return true;
  }
  const ScheduledItem& waiter_item = items_[item];
  std::size_t& deps_done = deps_done_[item];
  bool done_so_far = true;  // every dependency before this one is done
  for (std::size_t i = deps_done; i < waiter_item.after.size(); ++i) {
    const std::size_t dep = waiter_item.after[i];
    const ScheduledItem& needed = items_[dep];
    // Only done is final: changed here may yet fail its reboot's check.
    done_so_far = done_so_far && needed.progress == Progress::kDone;
    if (done_so_far) {
      deps_done = i + 1;
      continue;
    }
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
        needed.progress == Progress::kChangedUnproven && needed.node == waiter_item.node;
    if (needed.progress != Progress::kDone && !changed_here) {
      waiter.item = dep;
      return false;
    }
  }
  // Few nodes are down at a time, and an item may reach thousands (the
  // master's step that reads every worker): then the down ones are looked
  // up in a sorted `reached` rather than each reached one in down_.
  if (down_.size() < reached.size() && std::is_sorted(reached.begin(), reached.end())) {
    for (const std::string& node : down_) {
      if (std::binary_search(reached.begin(), reached.end(), node)) {
        waiter.node = node;
        return false;
      }
    }
  } else {
    for (const std::string& node : reached) {
      if (down_.count(node) != 0) {
        waiter.node = node;
        return false;
      }
    }
  }
  admission.verdict = Admission::Verdict::kGo;
  return true;
}

Admission Scheduler::WaitToStart(std::size_t item, const std::vector<std::string>& reached) {
  bool holds_slot = false;
  return WaitToStart(item, reached, holds_slot);
}

Admission Scheduler::WaitToStart(std::size_t item, const std::vector<std::string>& reached,
                                 bool& holds_slot, std::function<void()> resume) {
  std::unique_lock lock(mutex_);
  Admission admission;
  Waiter first;
  if (!Decided(item, reached, admission, first)) {
    if (resume && first.item) {
      if (holds_slot) {
        ReturnSlotLocked();
        holds_slot = false;
      }
      parked_.emplace(*first.item, std::move(resume));
      ++waiting_;
      waiting_changed_.notify_all();
      admission.verdict = Admission::Verdict::kParked;
      return admission;
    }
    Waiter waiter;
    WaitUntil(lock, waiter, [&] {
      const bool decided = Decided(item, reached, admission, waiter);
      if (!decided && holds_slot) {
        ReturnSlotLocked();
        holds_slot = false;
      }
      return decided;
    });
  }
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
  std::lock_guard lock(mutex_);
  const auto held = reaching_.find(item);
  if (held == reaching_.end()) {
    return;
  }
  for (const std::string& node : held->second) {
    if (--reached_by_[node] == 0) {
      WakeNode(node);  // a reboot may wait for no step to reach it
    }
  }
  reaching_.erase(held);
}

bool Scheduler::TakeSlot() {
  std::unique_lock lock(mutex_);
  Waiter waiter;
  WaitUntil(lock, waiter, [&] {
    waiter.slot = true;
    return slots_free_ > 0 || Stopping();
  });
  if (Stopping()) {
    return false;
  }
  --slots_free_;
  return true;
}

void Scheduler::ReturnSlot() {
  std::lock_guard lock(mutex_);
  ReturnSlotLocked();
}

void Scheduler::ReturnSlotLocked() {
  ++slots_free_;
  if (!on_slot_.empty()) {
    // The oldest, taken off the queue so the next slot wakes the next one;
    // it queues again if another call took the slot first.
    Waiter* oldest = on_slot_.front();
    on_slot_.pop_front();
    oldest->queued.reset();
    oldest->woken.notify_one();
  }
}

void Scheduler::Settle(std::size_t item, Progress progress) {
  Settle(std::vector<std::size_t>{item}, progress);
}

void Scheduler::Settle(const std::vector<std::size_t>& items, Progress progress) {
  std::lock_guard lock(mutex_);
  for (const std::size_t item : items) {
    items_[item].progress = progress;
    WakeItem(item);
  }
}

bool Scheduler::EnterRebootBatch(const std::string& node) {
  std::unique_lock lock(mutex_);
  const auto unreached = [&] { return reached_by_[node] == 0; };
  Waiter waiter;
  if (limits_.batch != 0) {
    WaitUntil(lock, waiter, [&] {
      if (!batch_open_ || batch_members_ >= limits_.batch) {
        waiter.batch = true;
        return false;
      }
      if (!unreached()) {
        waiter.node = node;
        return false;
      }
      return true;
    });
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
  const bool told = !unreached() && limits_.on_wait;
  if (told) {
    limits_.on_wait(true);
  }
  while (!unreached()) {
    held_.insert(&waiter);
    ++waiting_;
    waiting_changed_.notify_all();
    waiter.node = node;
    Register(waiter);
    waiter.woken.wait(lock);
    Unregister(waiter);
    --waiting_;
    held_.erase(&waiter);
  }
  if (told) {
    limits_.on_wait(false);
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
  std::lock_guard lock(mutex_);
  down_.erase(node);
  --rebooting_;
  WakeNode(node);  // items that reach it
  if (limits_.batch != 0 && rebooting_ == 0) {
    batch_members_ = 0;
    batch_open_ = true;
    for (Waiter* w : on_batch_) {
      w->woken.notify_one();
    }
  }
}

std::size_t Scheduler::MaxConcurrentReboots() const {
  std::lock_guard lock(mutex_);
  return max_rebooting_;
}

bool Scheduler::EnterOutOfService(const std::string& node) {
  std::unique_lock lock(mutex_);
  Waiter waiter;
  WaitUntil(lock, waiter, [&] {
    if (limits_.members_out != 0 && out_of_service_.size() >= limits_.members_out) {
      waiter.service = true;
      return false;
    }
    return true;
  });
  if (Stopping()) {
    return false;  // never drained: a stop must not take more nodes out
  }
  out_of_service_.insert(node);
  max_out_of_service_ = std::max(max_out_of_service_, out_of_service_.size());
  return true;
}

void Scheduler::LeaveOutOfService(const std::string& node) {
  std::lock_guard lock(mutex_);
  if (out_of_service_.erase(node) != 0 && !on_service_.empty()) {
    on_service_.front()->woken.notify_one();
  }
}

std::size_t Scheduler::MaxOutOfService() const {
  std::lock_guard lock(mutex_);
  return max_out_of_service_;
}

void Scheduler::NodeFailed(const std::string& node) {
  std::lock_guard lock(mutex_);
  failed_nodes_.insert(node);
  ++nodes_failed_in_run_;
  if (limits_.fail_fast ||
      nodes_failed_in_run_ * 100 >
          static_cast<std::size_t>(limits_.max_fail_percent) * limits_.total_nodes) {
    stop_all_ = true;
    WakeAll();
    return;
  }
  // Waiters on that node's items now learn it never runs them. Rare: a
  // scan of the waiters is fine.
  for (const auto& [item, w] : on_item_) {
    if (items_[item].node == node) {
      w->woken.notify_one();
    }
  }
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (items_[it->first].node == node) {
      auto next = std::next(it);
      ResumeParked(it, next);
      it = next;
    } else {
      ++it;
    }
  }
}

void Scheduler::StopAll() {
  std::lock_guard lock(mutex_);
  stop_all_ = true;
  WakeAll();
}

}  // namespace gpuctl
