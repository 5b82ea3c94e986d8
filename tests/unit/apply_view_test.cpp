// What `gpuctl apply` says around its plan: the exact words, since scripts
// and the CLI tests read them.
#include "gpuctl/view/apply_view.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include "cluster_builder.h"

namespace gpuctl {
namespace {

TEST(ApplyViewTest, ASavedPlanRefusedAfterProbingListsHowTheNodesMoved) {
  EXPECT_EQ(SavedPlanMovedMessage({"worker1: os.sysctl was ok, now will change",
                                   "worker2: was rocky-9, now ubuntu-22.04"}),
            "gpuctl: refusing the saved plan: the nodes moved since it was made:\n"
            "  worker1: os.sysctl was ok, now will change\n"
            "  worker2: was rocky-9, now ubuntu-22.04\n");
}

TEST(ApplyViewTest, TheConfirmationAsksForYesOrSaysWhyItCannotAsk) {
  EXPECT_EQ(ConfirmPrompt(), "\nApply these changes? Only 'yes' is accepted: ");
  EXPECT_EQ(CannotConfirmMessage(),
            "gpuctl: stdin is not a terminal, so apply cannot ask for confirmation; re-run with "
            "--yes to apply without asking\n");
}

TEST(ApplyViewTest, NothingToApplySaysWhetherEveryNodeWasChecked) {
  EXPECT_EQ(NothingToApplyMessage(0), "\nNo changes. The cluster matches the inventory.\n");
  EXPECT_EQ(NothingToApplyMessage(2),
            "\nNothing to change on the reachable nodes; 2 node(s) failed (above) and were not "
            "checked.\n");
}

TEST(ApplyViewTest, NodesLeftOutAreMentionedOnlyWhenThereAreSome) {
  EXPECT_EQ(LeftOutNotice(0), "");
  EXPECT_EQ(LeftOutNotice(1), "\nNodes with errors above are left out; the others go on.\n");
}

TEST(ApplyViewTest, RebootNoticeNamesTheNodesAndThePace) {
  EXPECT_EQ(RebootNotice({}, 0), "");
  EXPECT_EQ(RebootNotice({"worker1"}, 0), "\nReboots: 1 node (worker1).\n");
  EXPECT_EQ(RebootNotice({"worker1", "worker2"}, 0),
            "\nReboots: 2 nodes (worker1, worker2); nodes not yet in a running cluster all at "
            "once (no --batch; --batch 1 reboots one at a time), its members drained and "
            "rebooted one at a time.\n");
  EXPECT_EQ(RebootNotice({"worker1", "worker2", "worker3"}, 2),
            "\nReboots: 3 nodes (worker1, worker2, worker3); at most 2 at a time (--batch).\n");
}

TEST(ApplyViewTest, RebootNoticeNamesEightNodesAndCountsTheRest) {
  std::vector<std::string> nodes;
  for (int i = 1; i <= 10; ++i) {
    nodes.push_back("n" + std::to_string(i));
  }
  EXPECT_EQ(RebootNotice(nodes, 1),
            "\nReboots: 10 nodes (n1, n2, n3, n4, n5, n6, n7, n8 and 2 more); at most 1 at a "
            "time (--batch).\n");
}

TEST(ApplyViewTest, TheEndOfARunSaysWhatHappenedAndWhereTheJournalIs) {
  EXPECT_EQ(CancelledMessage(), "Apply cancelled; nothing was changed.\n");
  EXPECT_EQ(InterruptedMessage(),
            "Interrupted: steps in flight finished; reboots not yet started were cancelled and "
            "the rest did not start. Run apply again to continue.\n");
  EXPECT_EQ(JournalLine("/var/state/gpuctl/lab/runs/20260101T000000Z-42"),
            "Journal: /var/state/gpuctl/lab/runs/20260101T000000Z-42/journal.jsonl\n");
}

TEST(ApplyRecap, ALinePerNodeFoldedThenHowLongTheRunTook) {
  std::vector<Node> nodes = {testing::MakeNode("master1", Role::kMaster)};
  for (int i = 1; i <= 18; ++i) {
    nodes.push_back(testing::MakeNode(fmt::format("gpu{:02}", i), Role::kWorker));
  }
  const Inventory inventory = testing::MakeInventory(nodes);
  Step driver = testing::MakeStep("gpu.driver", {Role::kWorker});
  driver.reboot = true;
  const Catalog catalog =
      Catalog::FromSteps({testing::MakeStep("os.time", {Role::kMaster, Role::kWorker}), driver});
  Plan plan = Plan::Build(inventory, catalog);
  for (auto& item : plan.items()) {
    item.state = ItemState::kApplied;
  }
  plan.Find("master1", "os.time")->state = ItemState::kSatisfied;
  plan.Find("gpu07", "gpu.driver")->state = ItemState::kFailed;
  std::map<std::string, std::chrono::milliseconds> times;
  for (int i = 1; i <= 18; ++i) {
    times[fmt::format("gpu{:02}", i)] = std::chrono::milliseconds(125000 + i * 1000);
  }
  times["master1"] = std::chrono::milliseconds(4200);
  times["gpu03"] = times["gpu04"] = std::chrono::milliseconds(130000);
  const std::string recap = RecapText(plan, inventory, times, 255.2, "failed");
  // A line per group, names padded to the longest ("gpu[01-06,08-18] (17
  // identical)"), the nodes' times as a range; gpu07 apart.
  EXPECT_EQ(
      recap,
      "\nRecap:\n"
      "  master1                          ok=1 changed=0 failed=0 blocked=0 rebooted=0  4.2s\n"
      "  gpu[01-06,08-18] (17 identical)  ok=0 changed=2 failed=0 blocked=0 rebooted=1  "
      "2m06s-2m23s\n"
      "  gpu07                            ok=0 changed=1 failed=1 blocked=0 rebooted=0  "
      "2m12s\n"
      "\nApply failed after 4m15s: 35 changed, 1 failed, 0 blocked on 19 nodes.\n");
  EXPECT_NE(RecapText(plan, inventory, times, 3.25, "applied").find("Apply complete in 3.2s"),
            std::string::npos);
  // Cut to a terminal's width.
  const std::string narrow = RecapText(plan, inventory, times, 3.25, "applied", 40);
  EXPECT_NE(narrow.find("  gpu[01-06,08-18] (17 identical)  ok=0\xe2\x80\xa6\n"), std::string::npos)
      << narrow;
}

}  // namespace
}  // namespace gpuctl
