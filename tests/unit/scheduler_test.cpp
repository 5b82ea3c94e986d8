#include "gpuctl/run/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gpuctl {
namespace {

using Verdict = Admission::Verdict;

// Runs `wait` (a call that should wait) on its own thread and, once the
// scheduler holds it waiting, `release` (the change of scheduler state that
// should end the wait) on this one. Returns what `wait` returned, and whether
// it was held at all (the limit only keeps a broken scheduler from hanging).
template <typename Wait, typename Release>
auto WaitThenRelease(Scheduler& scheduler, Wait wait, Release release) {
  auto waiter = std::async(std::launch::async, wait);
  const bool waited = scheduler.AwaitWaiting(1, std::chrono::seconds(30));
  release();
  return std::pair{waiter.get(), waited};
}

// Items a0 and b0 on nodes a and b; b1 on b waits for a0; a1 on a waits for a0.
std::vector<ScheduledItem> TwoNodes() {
  return {{"a", {}, Progress::kWaiting},
          {"b", {}, Progress::kWaiting},
          {"b", {0}, Progress::kWaiting},
          {"a", {0}, Progress::kWaiting}};
}
constexpr std::size_t kA0 = 0;
constexpr std::size_t kB1 = 2;
constexpr std::size_t kA1 = 3;

SchedulerLimits Limits(std::size_t concurrency = 4, std::size_t batch = 0) {
  SchedulerLimits limits;
  limits.concurrency = concurrency;
  limits.batch = batch;
  limits.total_nodes = 4;
  return limits;
}

TEST(Scheduler, AnItemWithoutDependenciesStartsAtOnce) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  EXPECT_EQ(scheduler.WaitToStart(kA0, {}).verdict, Verdict::kGo);
}

TEST(Scheduler, AnItemWaitingOnAnotherNodeStartsOnceThatItemIsDone) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  const auto [admission, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.WaitToStart(kB1, {"a"}); },
      [&] { scheduler.Settle(kA0, Progress::kDone); });
  EXPECT_EQ(admission.verdict, Verdict::kGo);
  EXPECT_TRUE(waited);
}

TEST(Scheduler, AnItemWaitingOnAnotherNodeIsBlockedWhenThatItemFails) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  const auto [admission, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.WaitToStart(kB1, {"a"}); },
      [&] { scheduler.Settle(kA0, Progress::kDead); });
  EXPECT_EQ(admission.verdict, Verdict::kDeadItem);
  EXPECT_TRUE(waited);
  EXPECT_EQ(admission.blocker, kA0);
}

TEST(Scheduler, AnItemOnAFailedNodeBlocksItsWaiters) {
  // Failed before apply: nobody will ever settle a0.
  Scheduler before(Limits(), TwoNodes(), {"a"});
  EXPECT_EQ(before.WaitToStart(kB1, {"a"}).verdict, Verdict::kFailedNode);

  // Failing while b1 waits.
  Scheduler during(Limits(), TwoNodes(), {});
  const auto [admission, waited] = WaitThenRelease(
      during, [&] { return during.WaitToStart(kB1, {"a"}); }, [&] { during.NodeFailed("a"); });
  EXPECT_EQ(admission.verdict, Verdict::kFailedNode);
  EXPECT_TRUE(waited);
  EXPECT_EQ(admission.blocker, kA0);
}

TEST(Scheduler, AChangeAwaitingItsRebootCountsAsDoneOnlyOnItsOwnNode) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  scheduler.Settle(kA0, Progress::kChangedUnproven);
  // a1 joins a0's reboot; b1 waits until the reboot proved a0.
  EXPECT_EQ(scheduler.WaitToStart(kA1, {}).verdict, Verdict::kGo);
  const auto [admission, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.WaitToStart(kB1, {"a"}); },
      [&] { scheduler.Settle(kA0, Progress::kDone); });
  EXPECT_EQ(admission.verdict, Verdict::kGo);
  EXPECT_TRUE(waited);
}

TEST(Scheduler, AChangeHereThatFailsItsRebootStillBlocksAWaiterLookedAtBefore) {
  // a1 waits for a0 (changed on a, its reboot pending) and for b0. Looked
  // at while b0 runs, a0 passes; a0 then fails its reboot's verification
  // before b0 is done: a1 is blocked by a0, not admitted. Only a done
  // dependency is never looked at again.
  Scheduler scheduler(Limits(),
                      {{"a", {}, Progress::kWaiting},
                       {"b", {}, Progress::kWaiting},
                       {"a", {0, 1}, Progress::kWaiting}},
                      {});
  scheduler.Settle(0, Progress::kChangedUnproven);
  const auto [admission, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.WaitToStart(2, {"b"}); },
      [&] {
        scheduler.Settle(0, Progress::kDead);
        scheduler.Settle(1, Progress::kDone);
      });
  EXPECT_TRUE(waited);
  EXPECT_EQ(admission.verdict, Verdict::kDeadItem);
  EXPECT_EQ(admission.blocker, 0U);
}

TEST(Scheduler, AnItemDoesNotStartWhileANodeItReachesIsDown) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  ASSERT_TRUE(scheduler.EnterRebootBatch("b"));
  const auto [admission, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.WaitToStart(kA0, {"b"}); },
      [&] { scheduler.LeaveRebootBatch("b"); });
  EXPECT_EQ(admission.verdict, Verdict::kGo);
  EXPECT_TRUE(waited);
}

TEST(Scheduler, AnItemReachingManyNodesWaitsForTheOneThatIsDown) {
  // More nodes reached than down: the down ones are looked up in `reached`.
  Scheduler scheduler(Limits(), TwoNodes(), {});
  ASSERT_TRUE(scheduler.EnterRebootBatch("n5"));
  const auto [admission, waited] = WaitThenRelease(
      scheduler,
      [&] {
        return scheduler.WaitToStart(kA0, {"b", "n1", "n5", "n9"});
      },
      [&] { scheduler.LeaveRebootBatch("n5"); });
  EXPECT_EQ(admission.verdict, Verdict::kGo);
  EXPECT_TRUE(waited);
}

TEST(Scheduler, ANodeDoesNotGoDownUnderAnItemReachingIt) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  ASSERT_EQ(scheduler.WaitToStart(kA0, {"b"}).verdict, Verdict::kGo);
  const auto [entered, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.EnterRebootBatch("b"); },
      [&] { scheduler.ReleaseReach(kA0); });
  EXPECT_TRUE(entered);
  EXPECT_TRUE(waited);
}

TEST(Scheduler, SlotsBoundHowManyItemsRunAtOnce) {
  Scheduler scheduler(Limits(/*concurrency=*/1), TwoNodes(), {});
  ASSERT_TRUE(scheduler.TakeSlot());
  const auto [taken, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.TakeSlot(); }, [&] { scheduler.ReturnSlot(); });
  EXPECT_TRUE(taken);
  EXPECT_TRUE(waited);
}

TEST(Scheduler, ABatchAdmitsUpToItsSizeAndTheNextWaitsForAllOfIt) {
  Scheduler scheduler(Limits(4, /*batch=*/2), TwoNodes(), {});
  ASSERT_TRUE(scheduler.EnterRebootBatch("n1"));
  ASSERT_TRUE(scheduler.EnterRebootBatch("n2"));
  EXPECT_EQ(scheduler.MaxConcurrentReboots(), 2U);
  scheduler.LeaveRebootBatch("n1");  // n2 is still down: the batch stays closed
  const auto [entered, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.EnterRebootBatch("n3"); },
      [&] { scheduler.LeaveRebootBatch("n2"); });
  EXPECT_TRUE(entered);
  EXPECT_TRUE(waited);
  EXPECT_EQ(scheduler.MaxConcurrentReboots(), 2U);
}

TEST(Scheduler, ManyNodesRebootingTogetherNeverExceedTheBatch) {
  constexpr std::size_t kBatch = 2;
  constexpr int kNodes = 6;
  constexpr int kRounds = 50;
  Scheduler scheduler(Limits(4, kBatch), TwoNodes(), {});
  std::mutex mutex;
  std::size_t down = 0;
  std::size_t most_down = 0;
  {
    std::vector<std::jthread> nodes;
    for (int n = 0; n < kNodes; ++n) {
      nodes.emplace_back([&, name = "n" + std::to_string(n)] {
        for (int round = 0; round < kRounds; ++round) {
          ASSERT_TRUE(scheduler.EnterRebootBatch(name));
          {
            std::lock_guard lock(mutex);
            most_down = std::max(most_down, ++down);
          }
          {
            std::lock_guard lock(mutex);
            --down;
          }
          scheduler.LeaveRebootBatch(name);
        }
      });
    }
  }
  EXPECT_LE(most_down, kBatch);
  EXPECT_LE(scheduler.MaxConcurrentReboots(), kBatch);
  EXPECT_GE(scheduler.MaxConcurrentReboots(), 1U);
}

TEST(Scheduler, StopCancelsARebootWaitingForItsBatch) {
  Scheduler scheduler(Limits(4, /*batch=*/1), TwoNodes(), {});
  ASSERT_TRUE(scheduler.EnterRebootBatch("n1"));
  const auto [entered, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.EnterRebootBatch("n2"); }, [&] { scheduler.StopAll(); });
  EXPECT_FALSE(entered);
  EXPECT_TRUE(waited);
  EXPECT_EQ(scheduler.MaxConcurrentReboots(), 1U);
}

TEST(Scheduler, AnInterruptCancelsARebootWaitingForItsBatch) {
  std::atomic<bool> interrupted{false};
  SchedulerLimits limits = Limits(4, /*batch=*/1);
  limits.interrupted = &interrupted;
  Scheduler scheduler(limits, TwoNodes(), {});
  ASSERT_TRUE(scheduler.EnterRebootBatch("n1"));
  // As the signal handler does: the flag alone, no notification.
  const auto [entered, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.EnterRebootBatch("n2"); }, [&] { interrupted = true; });
  EXPECT_FALSE(entered);
  EXPECT_TRUE(waited);
}

TEST(Scheduler, MembersGoOutOfServiceOneAtATimeByDefault) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  ASSERT_TRUE(scheduler.EnterOutOfService("n1"));
  const auto [entered, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.EnterOutOfService("n2"); },
      [&] { scheduler.LeaveOutOfService("n1"); });
  EXPECT_TRUE(entered);
  EXPECT_TRUE(waited);
  EXPECT_EQ(scheduler.MaxOutOfService(), 1U);
}

TEST(Scheduler, MembersOutOfServiceNeverExceedTheirLimit) {
  constexpr std::size_t kOut = 2;
  SchedulerLimits limits = Limits();
  limits.members_out = kOut;
  Scheduler scheduler(limits, TwoNodes(), {});
  std::mutex mutex;
  std::size_t out = 0;
  std::size_t most_out = 0;
  {
    std::vector<std::jthread> nodes;
    for (int n = 0; n < 6; ++n) {
      nodes.emplace_back([&, name = "n" + std::to_string(n)] {
        for (int round = 0; round < 50; ++round) {
          ASSERT_TRUE(scheduler.EnterOutOfService(name));
          {
            std::lock_guard lock(mutex);
            most_out = std::max(most_out, ++out);
          }
          {
            std::lock_guard lock(mutex);
            --out;
          }
          scheduler.LeaveOutOfService(name);
        }
      });
    }
  }
  EXPECT_LE(most_out, kOut);
  EXPECT_LE(scheduler.MaxOutOfService(), kOut);
}

TEST(Scheduler, StopCancelsAMemberWaitingToBeDrained) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  ASSERT_TRUE(scheduler.EnterOutOfService("n1"));
  const auto [entered, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.EnterOutOfService("n2"); }, [&] { scheduler.StopAll(); });
  EXPECT_FALSE(entered);
  EXPECT_TRUE(waited);
}

TEST(Scheduler, StopEndsAnItemsWaitForItsDependencies) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  const auto [admission, waited] = WaitThenRelease(
      scheduler, [&] { return scheduler.WaitToStart(kB1, {"a"}); }, [&] { scheduler.StopAll(); });
  EXPECT_EQ(admission.verdict, Verdict::kStopped);
  EXPECT_TRUE(waited);
}

// Parking: with a `resume`, a node whose next item waits for another item
// gives its walker back, and is called back once when that wait may be over.
Verdict StartOrPark(Scheduler& scheduler, std::size_t item, const std::vector<std::string>& reached,
                    bool& holds_slot, int& resumed) {
  return scheduler.WaitToStart(item, reached, holds_slot, [&resumed] { ++resumed; }).verdict;
}

TEST(Scheduler, AParkedItemIsCalledBackOnceWhenWhatItWaitsForSettles) {
  Scheduler scheduler(Limits(1), TwoNodes(), {});
  ASSERT_TRUE(scheduler.TakeSlot());
  bool holds_slot = true;
  int resumed = 0;
  ASSERT_EQ(StartOrPark(scheduler, kB1, {"a"}, holds_slot, resumed), Verdict::kParked);
  EXPECT_FALSE(holds_slot) << "a parked node holds no slot";
  EXPECT_TRUE(scheduler.AwaitWaiting(1, std::chrono::seconds(0))) << "it counts as waiting";
  ASSERT_TRUE(scheduler.TakeSlot()) << "the only slot was given back";
  scheduler.ReturnSlot();
  scheduler.Settle(1, Progress::kDone);  // b0: not what b1 waits for
  EXPECT_EQ(resumed, 0);
  scheduler.Settle(kA0, Progress::kDone);
  EXPECT_EQ(resumed, 1);
  scheduler.Settle(kA0, Progress::kDone);
  EXPECT_EQ(resumed, 1) << "called back once";
  // Asked again, it is decided: nothing is parked, and it starts.
  bool none = false;
  EXPECT_EQ(StartOrPark(scheduler, kB1, {"a"}, none, resumed), Verdict::kGo);
  EXPECT_EQ(resumed, 1);
}

TEST(Scheduler, NothingIsParkedForAnItemThatIsDecidedOrWaitsForADownNode) {
  Scheduler scheduler(Limits(), TwoNodes(), {});
  bool holds_slot = false;
  int resumed = 0;
  EXPECT_EQ(StartOrPark(scheduler, kA0, {}, holds_slot, resumed), Verdict::kGo) << "free to start";
  Scheduler dead(Limits(), TwoNodes(), {});
  dead.Settle(kA0, Progress::kDead);
  EXPECT_EQ(StartOrPark(dead, kB1, {"a"}, holds_slot, resumed), Verdict::kDeadItem) << "blocked";
  // A reboot's wait is not parked: the walker waits it out.
  Scheduler rebooting(Limits(), TwoNodes(), {});
  rebooting.Settle(kA0, Progress::kDone);
  ASSERT_TRUE(rebooting.EnterRebootBatch("a"));
  const auto [verdict, waited] = WaitThenRelease(
      rebooting, [&] { return StartOrPark(rebooting, kB1, {"a"}, holds_slot, resumed); },
      [&] { rebooting.LeaveRebootBatch("a"); });
  EXPECT_EQ(verdict, Verdict::kGo);
  EXPECT_TRUE(waited);
  EXPECT_EQ(resumed, 0);
}

TEST(Scheduler, AParkedItemIsCalledBackWhenItsNodeFailsOrTheRunStops) {
  Scheduler failing(Limits(), TwoNodes(), {});
  bool holds_slot = false;
  int resumed = 0;
  ASSERT_EQ(StartOrPark(failing, kB1, {"a"}, holds_slot, resumed), Verdict::kParked);
  failing.NodeFailed("b");  // not the node b1 waits on
  EXPECT_EQ(resumed, 0);
  failing.NodeFailed("a");
  EXPECT_EQ(resumed, 1);
  EXPECT_EQ(failing.WaitToStart(kB1, {"a"}).verdict, Verdict::kFailedNode);

  Scheduler stopping(Limits(), TwoNodes(), {});
  ASSERT_EQ(StartOrPark(stopping, kB1, {"a"}, holds_slot, resumed), Verdict::kParked);
  ASSERT_EQ(StartOrPark(stopping, kA1, {}, holds_slot, resumed), Verdict::kParked);
  stopping.StopAll();
  EXPECT_EQ(resumed, 3);
  EXPECT_EQ(stopping.WaitToStart(kA1, {}).verdict, Verdict::kStopped);
}

TEST(Scheduler, FailFastStopsNewWorkAfterTheFirstFailedNode) {
  SchedulerLimits limits = Limits();
  limits.fail_fast = true;
  Scheduler scheduler(limits, TwoNodes(), {});
  EXPECT_FALSE(scheduler.Stopping());
  scheduler.NodeFailed("a");
  EXPECT_TRUE(scheduler.Stopping());
  EXPECT_EQ(scheduler.WaitToStart(kA0, {}).verdict, Verdict::kStopped);
  EXPECT_FALSE(scheduler.TakeSlot());
  EXPECT_FALSE(scheduler.EnterRebootBatch("b"));
}

TEST(Scheduler, MaxFailStopsOnlyOnceMoreNodesThanItsShareFailed) {
  SchedulerLimits limits = Limits();
  limits.max_fail_percent = 50;  // of 4 nodes: 2 may fail
  // A node that failed before apply is not counted again.
  Scheduler scheduler(limits, TwoNodes(), {"z"});
  scheduler.NodeFailed("a");
  scheduler.NodeFailed("b");
  EXPECT_FALSE(scheduler.Stopping());
  EXPECT_EQ(scheduler.WaitToStart(kA0, {}).verdict, Verdict::kGo);
  scheduler.NodeFailed("c");
  EXPECT_TRUE(scheduler.Stopping());
  EXPECT_FALSE(scheduler.TakeSlot());
}

}  // namespace
}  // namespace gpuctl
