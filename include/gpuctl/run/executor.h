// Executor: walks a probed Plan and makes it true (ninja's Builder).
//
// A walker thread walks one node at a time, taking its items in order, then
// the next node not yet started. There are as many walkers at work as
// concurrency slots. A node whose next item waits for another node's item
// is parked: the scheduler keeps it, and hands it back to the next free
// walker once that item settled. For any other wait (a reboot, a drain's
// turn) one more walker starts while this one waits, so a waiting node never
// holds up one that has not started. A thread per waiting node cost a
// 10,000-node apply 9,000 threads and 3 GB while every worker waited for
// the master's kubeadm init. An item
// waits, without holding a concurrency slot, until everything it depends on
// (on any node) is done; then it takes a slot, runs the change, and runs the
// verification probe. A failure stops that node and blocks what waits on it;
// other nodes go on unless --fail-fast or --max-fail says otherwise.
//
// A step that depends on another node's steps (or reads an input from it)
// reaches that node while it runs: the master's known_hosts step scans every
// node, k8s.nodes-ready reads each worker's state. Such a step never starts
// while a node it reaches is down for a reboot, and a node never goes down
// while a running step reaches it.
//
// A disruptive item (its change reboots the node or restarts its runtime) on
// a node that is a member of a running cluster first takes the node out of
// service: the catalog's drain (model/drain.h, run/drainer.h) cordons and
// empties it, at most `members_out` members at a time, and once the change,
// any reboot and every verification are green, its resume puts it back. A
// node that fails while drained stays drained, and the run says so.
//
// Who may start what and when (slots, dependencies, reaches, reboot batches,
// members out of service, stopping) is the Scheduler's (run/scheduler.h); the executor asks it,
// runs the scripts, and tells it how they ended.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "gpuctl/run/drainer.h"
#include "gpuctl/run/run_context.h"
#include "gpuctl/run/scheduler.h"

namespace gpuctl {

struct ApplyOptions {
  bool fail_fast = false;      // the first failure stops every node
  int max_fail_percent = 100;  // stop all once more nodes than this have failed
  std::size_t batch = 0;       // nodes rebooting at once; 0: no limit
  // Cluster members out of service at once (drained for a disruptive
  // change); 0: no limit. --batch sets it too; otherwise one at a time.
  std::size_t members_out = 1;
  bool drain = true;                         // false: --no-drain (a maintenance window)
  std::chrono::seconds drain_timeout{600};   // evictions, or jobs ending (--drain-timeout)
  std::chrono::seconds reboot_timeout{600};  // an HGX board's POST alone takes minutes
  // Set from a signal handler: no new item starts; in-flight ones finish.
  const std::atomic<bool>* interrupted = nullptr;
};

// "10m", "1m30s", "45s".
std::string Duration(std::chrono::seconds d);

// Parses "25%" (of `nodes`, at least 1) or "3"; returns 0 for "" or "0".
// Throws std::invalid_argument on anything else.
std::size_t ParseBatch(const std::string& text, std::size_t nodes);

// The plan as the scheduler sees it. An item still to run waits for the
// items it depends on that are still to run, and, in place of each one
// found already true, for what that one stands on in turn: a step found
// true stays true only while what it stands on does not change. (The
// master's wait for every node Ready depends on each worker's join, found
// done, but must still wait for a containerd restart under that join.)
std::vector<ScheduledItem> ScheduledItems(const Plan& plan);

class Executor {
 public:
  Executor(RunContext& context, ApplyOptions options);
  // Runs every item that needs a change (or may, once its dependencies ran).
  void Run();

  // Largest number of nodes that were down for a reboot at the same time.
  [[nodiscard]] std::size_t MaxConcurrentReboots() const {
    return scheduler_.MaxConcurrentReboots();
  }
  // Largest number of cluster members that were drained at the same time.
  [[nodiscard]] std::size_t MaxMembersOut() const { return scheduler_.MaxOutOfService(); }

 private:
  // A node's walk, kept between a walker's turns on it: a node whose next
  // item waits for another item is parked (Scheduler::WaitToStart), and the walker
  // that resumes it goes on from `next` with the same state.
  struct NodeWalk {
    const Node* node = nullptr;
    std::size_t next = 0;  // index in the plan's ItemsOf(node)
    bool reboot_pending = false;
    bool drained = false;  // this walk took the node out of service
    // The item whose reach (on the node the drain runs on) is held until
    // the node is back in service.
    std::size_t drain_reach = 0;
    bool unsettled = false;  // a reboot did not end verified (failed, or the run stopped)
    std::vector<std::size_t> awaiting_verify;  // changed, verified after the reboot
    // ReachedNodes of the item `reached_item`, kept while it is parked: the
    // master's step that reads every worker reaches thousands of nodes and
    // is resumed each time the item it waits for settles.
    std::vector<std::string> reached;
    std::size_t reached_item = static_cast<std::size_t>(-1);
  };

  // A walker's thread: walks nodes (handed back ones first, then those not
  // yet started) until every node was walked to its end.
  void Walker();
  // The scheduler's call back for a parked node: queues it for a walker.
  void Resume(NodeWalk& walk);
  // The scheduler's on_wait, and the executor's own reboot wait: a walker
  // waiting for something other than a slot (true) is no longer at work
  // (false: it is again). Nested waits count once.
  void WalkerWaits(bool waiting);
  // Walks the node from walk.next on. False: parked (the scheduler hands it
  // back through Resume); true: walked to its end.
  bool WalkNode(NodeWalk& walk);
  // Asks the scheduler whether the item may start. On kGo it holds its
  // reach on the other nodes it works on until ReleaseReach; on kParked
  // (only with `resume`) the scheduler calls `resume` once it may start;
  // otherwise it is blocked (and reported so) and holds nothing.
  // `reached` is ReachedNodes(node, item).
  Admission::Verdict WaitToStart(PlanItem& item, const std::vector<std::string>& reached,
                                 bool& holds_slot, std::function<void()> resume = {});
  // The other nodes `item` (on `node`) works on: those of what it waits
  // for, its inputs, and where its node's drain runs.
  [[nodiscard]] std::vector<std::string> ReachedNodes(const Node& node, const PlanItem& item) const;
  // Runs `item` in a concurrency slot, taking one unless `holds_slot` says
  // the walker holds one already (it keeps it for the node's next item).
  bool RunItem(const Node& node, PlanItem& item, bool& reboot_pending, bool& holds_slot);
  bool RebootAndVerify(const Node& node, std::vector<std::size_t>& awaiting_verify);
  // After the reboot command: true once the node answers with a fresh /run;
  // false on the timeout, a host key or login refused, or an interrupt, with
  // the last error in `last_error`.
  bool WaitForReboot(const Node& node, std::string& last_error);
  // Before `item`'s disruptive change (admitted, holding its reach): drains
  // the node if it is a member of a running cluster. While it waits for its
  // turn it gives back its slot and reach, then is admitted again. A drained
  // node's item keeps its reach (on the node the drain runs on) until
  // ReturnToService. False: `item` is blocked or failed (reported), and the
  // walk ends.
  bool TakeOutOfService(const Node& node, PlanItem& item, bool& holds_slot, bool& drained);
  // After the node's disruptive changes verified: resumes it and releases
  // `drain_reach`'s reach. False when the resume failed (the node failed,
  // reported).
  bool ReturnToService(const Node& node, std::size_t drain_reach, bool& drained);
  void Finish(PlanItem& item, ItemState state, const std::string& detail);
  // Stops the node: its error goes to the run context (later phases skip
  // it), the reporter and the scheduler (what waits on it is blocked).
  void FailNode(const Node& node, const std::string& error);

  RunContext& context_;
  ApplyOptions options_;
  std::map<Role, std::vector<const Node*>> holders_;  // once: asked for on every item
  // The walkers, under pool_mutex_: Run starts or wakes one while fewer than
  // at_work_target_ are at work and a node is left to start.
  std::mutex pool_mutex_;
  std::condition_variable at_work_changed_;  // Run waits on it
  std::condition_variable idle_woken_;       // walkers with no work wait on it
  std::vector<NodeWalk> walks_;              // one per node to walk; never moved once Run starts
  std::size_t next_node_ = 0;                // walks_[next_node_] is the next to start
  std::deque<NodeWalk*> resumed_;            // parked nodes handed back, for the next free walker
  std::size_t finished_ = 0;                 // nodes walked to their end
  std::size_t at_work_ = 0;                  // walking a node, or about to; not waiting
  std::size_t at_work_target_ = 1;
  std::size_t idle_ = 0;  // walkers waiting on idle_woken_
  std::size_t wake_ = 0;  // of those, how many Run has called back to work
  Scheduler scheduler_;   // everything the node walkers share
  Drainer drainer_;
};

}  // namespace gpuctl
