// Executor: walks a probed Plan and makes it true (ninja's Builder).
//
// Every node gets a walker thread that takes its items in order. An item
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
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpuctl/run_context.h"

namespace gpuctl {

struct ApplyOptions {
  bool fail_fast = false;                    // the first failure stops every node
  int max_fail_percent = 100;                // stop all once more nodes than this have failed
  std::size_t batch = 0;                     // nodes rebooting at once; 0: no limit
  std::chrono::seconds reboot_timeout{600};  // an HGX board's POST alone takes minutes
  // Set from a signal handler: no new item starts; in-flight ones finish.
  const std::atomic<bool>* interrupted = nullptr;
};

// "10m", "1m30s", "45s".
std::string Duration(std::chrono::seconds d);

// Parses "25%" (of `nodes`, at least 1) or "3"; returns 0 for "" or "0".
// Throws std::invalid_argument on anything else.
std::size_t ParseBatch(const std::string& text, std::size_t nodes);

class Executor {
 public:
  Executor(RunContext& context, ApplyOptions options);
  // Runs every item that needs a change (or may, once its dependencies ran).
  void Run();

  // Largest number of nodes that were down for a reboot at the same time.
  [[nodiscard]] std::size_t MaxConcurrentReboots() const { return max_rebooting_; }

 private:
  void WalkNode(const Node& node);
  // On true the item holds its reach on the nodes in `reached` until
  // ReleaseReach; on false it is blocked and holds nothing.
  bool WaitForDependencies(const PlanItem& item, const std::vector<std::size_t>& awaiting_reboot,
                           const std::vector<std::string>& reached);
  [[nodiscard]] std::vector<std::string> ReachedNodes(const PlanItem& item) const;
  void ReleaseReach(const std::vector<std::string>& reached);
  bool RunItem(const Node& node, PlanItem& item, bool& reboot_pending);
  bool RebootAndVerify(const Node& node, std::vector<std::size_t>& awaiting_verify);
  void Finish(PlanItem& item, ItemState state, const std::string& detail);
  void NodeFailed(const Node& node, const std::string& error);
  [[nodiscard]] bool Stopping() const;
  template <typename Predicate>
  void WaitUntil(std::unique_lock<std::mutex>& lock, Predicate predicate);

  // Rolling reboots: a batch is the set of nodes down at once; a new batch
  // starts only after the whole previous one is back and verified. False:
  // the run is stopping, so this reboot must not start (nothing was taken).
  bool EnterRebootBatch(const std::string& node);
  // After the reboot command: true once the node answers with a fresh /run;
  // false on the timeout, a host key or login refused, or an interrupt.
  bool WaitForReboot(const Node& node);
  void LeaveRebootBatch(const std::string& node);

  RunContext& context_;
  ApplyOptions options_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t slots_free_ = 0;
  std::size_t failed_nodes_ = 0;
  std::atomic<bool> stop_all_{false};  // read by walkers outside the lock
  std::size_t batch_members_ = 0;      // joined the current batch
  std::size_t rebooting_ = 0;          // still down or not yet verified
  bool batch_open_ = true;
  std::size_t max_rebooting_ = 0;
  std::set<std::string> down_;             // rebooting, or back but not yet verified
  std::map<std::string, int> reached_by_;  // node -> running items on other nodes reaching it
  std::map<std::string, std::string> last_reboot_error_;  // why WaitForReboot gave up
};

}  // namespace gpuctl
