// Scheduler: what may start now during apply (ninja's Plan next to the
// Executor's Builder).
//
// The Executor's walkers each walk one node at a time. Before an item a walker
// asks the scheduler whether it may start, before a reboot whether the node may
// go down, and afterwards it tells the scheduler how things ended. Everything
// the walkers share lives here, under one mutex: the concurrency slots, how far
// each item got, which nodes are down for a reboot or reached by a running
// step on another node, the current reboot batch, the failed nodes, and
// whether the run is stopping. It runs no command and knows no step, so it is
// tested alone (tests/unit/scheduler_test.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gpuctl {

// How far an item got, as far as the items waiting on it care.
enum class Progress {
  kWaiting,          // not run yet, or running
  kChangedUnproven,  // changed, verified only after its node's reboot
  kDone,             // holds (or needs a person): its dependents may start
  kDead,             // failed or blocked: its dependents are blocked
};

struct SchedulerLimits {
  std::size_t concurrency = 1;  // items running at once (the reboot wait is not one)
  std::size_t batch = 0;        // nodes down for a reboot at once; 0: no limit
  // Cluster members taken out of service (drained) at once; 0: no limit.
  // Rolling by default: a running cluster loses one node at a time.
  std::size_t members_out = 1;
  bool fail_fast = false;       // the first failed node stops the run
  int max_fail_percent = 100;   // stop once more than this share of all nodes failed
  std::size_t total_nodes = 0;  // the inventory's, the base of max_fail_percent
  // Set from a signal handler, which cannot notify: waits poll it.
  const std::atomic<bool>* interrupted = nullptr;
  // Called with true as a call starts waiting for something other than a
  // concurrency slot (another item, a node that is down or reached, the
  // reboot batch), and with false once that wait is over. The executor
  // starts or wakes another walker then, so that a waiting node never holds
  // up one that has not started. Runs under the scheduler's lock: it must
  // not call the scheduler.
  std::function<void(bool)> on_wait;
};

// One plan item as the scheduler sees it: where it runs, what it waits for.
struct ScheduledItem {
  std::string node;
  std::vector<std::size_t> after;  // indexes of the items it depends on
  Progress progress = Progress::kWaiting;
};

// Why an item may or may not start.
struct Admission {
  enum class Verdict {
    kGo,          // start it; it now reaches the nodes it was asked about
    kDeadItem,    // `blocker` failed or was blocked
    kFailedNode,  // `blocker` waits on a node that failed and will never run it
    kStopped,     // the run is stopping
    kParked,      // it waits for another item without its caller (WaitToStart's `resume`)
  };
  Verdict verdict = Verdict::kGo;
  std::size_t blocker = 0;  // with kDeadItem and kFailedNode
};

class Scheduler {
 public:
  // `failed_nodes`: nodes already out of the run (no walker will run their items).
  Scheduler(SchedulerLimits limits, std::vector<ScheduledItem> items,
            std::set<std::string> failed_nodes);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Waits until every dependency of `item` is done and none of the nodes in
  // `reached` (other nodes the item works on) is down. On kGo the item holds
  // those nodes up until ReleaseReach; otherwise it holds nothing, and the
  // caller reports the item dead with Settle.
  Admission WaitToStart(std::size_t item, const std::vector<std::string>& reached);
  // The same for a walker that may hold a concurrency slot (`holds_slot`):
  // if the item must wait, the slot goes back first, so that no walker sits
  // on a slot while it waits (it could be waiting for a walker that needs
  // one). `holds_slot` then says whether it still holds it.
  //
  // With `resume`, an item that would wait for another item (not for a down
  // node, a slot or a stop) is parked instead: kParked, at once, the slot
  // given back and `resume` kept. It is called once, under the scheduler's
  // lock, when that wait may be over (the item settles, its node fails, the
  // run stops), and must only hand the node back to a walker, which asks
  // again. The walker meanwhile takes another node rather than hold a
  // thread for this one: 10,000 workers wait for the master's kubeadm init.
  Admission WaitToStart(std::size_t item, const std::vector<std::string>& reached, bool& holds_slot,
                        std::function<void()> resume = {});
  void ReleaseReach(std::size_t item);

  // A concurrency slot: a node being worked on. A walker keeps its slot
  // while its node's next item can start at once, and gives it back to
  // wait (for another item, or a reboot). False: the run is stopping and
  // nothing was taken. Slots go to waiters oldest first.
  bool TakeSlot();
  void ReturnSlot();

  // Records how far items got and wakes whoever waits on them.
  void Settle(std::size_t item, Progress progress);
  void Settle(const std::vector<std::size_t>& items, Progress progress);

  // Rolling reboots: a batch is the set of nodes down at once, and a new
  // batch starts only once the whole previous one is back and verified. A
  // node also waits until no running step reaches it. False: the run is
  // stopping, so this reboot must not start (the node is not down).
  bool EnterRebootBatch(const std::string& node);
  // The node is back and verified, or given up on.
  void LeaveRebootBatch(const std::string& node);
  [[nodiscard]] std::size_t MaxConcurrentReboots() const;

  // A member of a running cluster is about to be drained for a disruptive
  // change: waits until fewer than `members_out` members are out of
  // service. False: the run is stopping, and the node is not taken out.
  // The caller holds no reach (a member out of service waits for nothing
  // another node could be holding for it).
  bool EnterOutOfService(const std::string& node);
  // The node is back in service, or given up on (it stays drained, but no
  // longer counts: the run goes on without it).
  void LeaveOutOfService(const std::string& node);
  [[nodiscard]] std::size_t MaxOutOfService() const;

  // Counts a failed node; --fail-fast or --max-fail may stop the run.
  void NodeFailed(const std::string& node);
  void StopAll();
  // No new item or reboot starts once this is true; running ones finish.
  [[nodiscard]] bool Stopping() const;

  // Blocks until at least `count` calls are held waiting (not just passing
  // through), or `limit` passes: a test knows a call really waits before it
  // releases it. False when the limit passed.
  bool AwaitWaiting(std::size_t count, std::chrono::seconds limit);

 private:
  // A call held waiting. Each has a condition variable of its own and is
  // woken only by a change to what it waits for (an item's progress, a
  // node's state, a slot, the batch): with a walker thread per node, one
  // shared condition variable woke every walker on every change, and apply
  // grew with the square of the cluster.
  struct Waiter;
  // Holds the call in `waiter` until `ready` (run under the lock) is true or
  // the run stops. `ready` says what it still waits for through the waiter.
  template <typename Predicate>
  void WaitUntil(std::unique_lock<std::mutex>& lock, Waiter& waiter, Predicate ready);
  void Register(Waiter& waiter);
  void Unregister(Waiter& waiter);
  void WakeItem(std::size_t item);
  void WakeNode(const std::string& node);
  void WakeAll();
  // Calls back (and forgets) the parked nodes in [first, last) of parked_.
  void ResumeParked(std::multimap<std::size_t, std::function<void()>>::iterator first,
                    std::multimap<std::size_t, std::function<void()>>::iterator last);
  void ReturnSlotLocked();
  // Under the lock: true once waiting for `item` is over, with `admission`
  // saying how it ended; false while it must go on waiting, with `waiter`
  // naming the item or node it waits for.
  bool Decided(std::size_t item, const std::vector<std::string>& reached, Admission& admission,
               Waiter& waiter);

  const SchedulerLimits limits_;
  mutable std::mutex mutex_;
  std::vector<ScheduledItem> items_;
  // How many of each item's dependencies, from the first, were found done:
  // done is final, so the next look starts there. An item on the master
  // that waits for one on each of 10,000 workers is looked at again as each
  // of them settles; starting over each time made that wait quadratic.
  std::vector<std::size_t> deps_done_;
  std::set<std::string> failed_nodes_;
  std::size_t nodes_failed_in_run_ = 0;  // what --max-fail counts: not those failed before
  std::atomic<bool> stop_all_{false};    // read by walkers outside the lock
  std::size_t slots_free_;
  std::map<std::size_t, std::vector<std::string>> reaching_;  // running item -> nodes it reaches
  std::map<std::string, int> reached_by_;  // node -> running items on other nodes reaching it
  std::set<std::string> down_;             // rebooting, or back but not yet verified
  std::size_t batch_members_ = 0;          // joined the current batch
  bool batch_open_ = true;
  std::size_t rebooting_ = 0;  // still down or not yet verified
  std::size_t max_rebooting_ = 0;
  std::size_t waiting_ = 0;                  // calls held in a wait now
  std::condition_variable waiting_changed_;  // for AwaitWaiting
  // Who waits for what; each waiter is in at most one of the first five.
  // Ordered multimaps: their iterators stay valid as others come and go, so
  // a waiter keeps its own and leaves without a scan of those beside it
  // (every worker's join waits on the master's init).
  std::multimap<std::size_t, Waiter*> on_item_;
  std::multimap<std::string, Waiter*> on_node_;
  // Lists, so that a waiter leaves its queue in constant time through the
  // position it keeps: with a walker per node, thousands queue for a slot.
  std::list<Waiter*> on_slot_;     // woken one at a time, oldest first
  std::list<Waiter*> on_batch_;    // woken together when a batch opens
  std::list<Waiter*> on_service_;  // woken one at a time, oldest first
  std::set<std::string> out_of_service_;
  std::size_t max_out_of_service_ = 0;
  std::unordered_set<Waiter*> held_;  // every held waiter, for a stop
  // Parked nodes (WaitToStart's `resume`), by the item each waits for:
  // called back, not woken.
  std::multimap<std::size_t, std::function<void()>> parked_;
  // A signal handler sets limits_.interrupted and cannot notify: this
  // thread looks at the flag a few times a second and wakes every waiter.
  std::condition_variable watch_changed_;
  bool watch_done_ = false;
  std::thread watch_;
};

}  // namespace gpuctl
