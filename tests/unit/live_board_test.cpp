// The live board: what it shows for each phase (Render, with the clock given
// by the test), what the terminal receives (frames erased and redrawn in
// place, finished lines above), the plain heartbeat, and when a terminal
// gets a board at all. The ticker is off except in the thread test, which
// only checks that events from many threads and the ticker do not race.
#include "gpuctl/view/live_board.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <thread>

namespace gpuctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = LiveBoard::Clock;
using std::chrono::seconds;

// std::regex (ECMAScript): "\n" and anchors mean what they say.
bool LiveBoardHas(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

PlanItem Item(std::size_t id, const std::string& node, const std::string& step, ItemState state) {
  PlanItem item;
  item.id = id;
  item.node = node;
  item.step = step;
  item.state = state;
  return item;
}

// Three workers with two steps each to change, and one already true.
Plan ThreeWorkers() {
  std::vector<PlanItem> items;
  for (const std::string node : {"worker1", "worker2", "worker3"}) {
    items.push_back(Item(items.size(), node, "os.chrony", ItemState::kSatisfied));
    items.push_back(Item(items.size(), node, "gpu.driver", ItemState::kNeedsChange));
    items.push_back(Item(items.size(), node, "k8s.join", ItemState::kKnownAfterApply));
  }
  return Plan::FromItems({"worker1", "worker2", "worker3"}, items);
}

BoardOptions Quiet(bool terminal) {
  BoardOptions options;
  options.terminal = terminal;
  options.width = 100;
  options.height = 40;
  options.ticker = false;
  return options;
}

PlanItem Ended(const Plan& plan, const std::string& node, const std::string& step,
               ItemState state) {
  PlanItem item = *plan.Find(node, step);
  item.state = state;
  return item;
}

TEST(LiveBoard, ApplyShowsEachNodesStepFoldedWithCountsAndBar) {
  std::ostringstream out;
  LiveBoard board(out, Quiet(false), {"worker1", "worker2", "worker3"});
  const Plan plan = ThreeWorkers();
  board.Expect(plan);
  board.PhaseStarted("apply");
  const auto t0 = Clock::now();
  board.CommandStarted("worker1", "gpu.driver", Activity::kChange, "");
  board.CommandStarted("worker2", "gpu.driver", Activity::kChange, "");
  board.Note("worker3", "rebooting");

  const auto lines = board.Render(t0 + seconds(12));
  ASSERT_EQ(lines.size(), 3U) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines[0],
              ::testing::MatchesRegex(R"(  worker\[1-2\] \(2\) +gpu\.driver +change  1[12]s)"));
  EXPECT_THAT(lines[1], ::testing::MatchesRegex(R"(  worker3 +rebooting  1[12]s)"));
  EXPECT_THAT(lines[2], HasSubstr("apply [------------------------] 0/6 steps"));
  EXPECT_THAT(lines[2], HasSubstr("nodes: 0 done, 3 running, 0 waiting, 0 failed"));

  // worker1 finishes both its steps, worker2's driver fails (its join is
  // blocked), worker3 waits for a slot: no command, no note.
  board.ItemUpdated(Ended(plan, "worker1", "gpu.driver", ItemState::kApplied));
  board.ItemUpdated(Ended(plan, "worker1", "k8s.join", ItemState::kApplied));
  board.CommandFinished("worker1", "gpu.driver", Activity::kChange, {});
  board.ItemUpdated(Ended(plan, "worker2", "gpu.driver", ItemState::kFailed));
  board.ItemUpdated(Ended(plan, "worker2", "k8s.join", ItemState::kBlocked));
  board.CommandFinished("worker2", "gpu.driver", Activity::kChange, {});
  board.CommandStarted("worker3", "gpu.driver", Activity::kVerify, "");
  board.CommandFinished("worker3", "gpu.driver", Activity::kVerify, {});
  // The same event twice counts once.
  board.ItemUpdated(Ended(plan, "worker1", "k8s.join", ItemState::kApplied));

  const auto later = board.Render(Clock::now());
  ASSERT_EQ(later.size(), 1U) << ::testing::PrintToString(later);
  EXPECT_THAT(later[0], HasSubstr("[################--------] 4/6 steps"));
  EXPECT_THAT(later[0], HasSubstr("nodes: 1 done, 0 running, 1 waiting, 1 failed"));
}

TEST(LiveBoard, ProbingCountsNodesAndListsThoseStillProbing) {
  std::ostringstream out;
  LiveBoard board(out, Quiet(false), {"gpu01", "gpu02", "gpu03", "gpu04"});
  board.PhaseStarted("connect");
  board.NodeConnected("gpu01", {});
  board.NodeConnected("gpu02", {});
  board.NodeConnected("gpu03", {});
  board.NodeFailed("gpu04", "No route to host");
  board.PhaseStarted("probe");
  board.ItemUpdated(Item(0, "gpu02", "os.chrony", ItemState::kNeedsChange));

  const auto lines = board.Render(Clock::now() + seconds(3));
  ASSERT_EQ(lines.size(), 2U) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines[0], ::testing::MatchesRegex(R"(  gpu\[01,03\] \(2\) +probing  [34]s)"));
  EXPECT_THAT(lines[1], HasSubstr("probe [########----------------] 1/3 nodes, 0 failed"));
  // The failure was written as it happened, with the time of day.
  EXPECT_TRUE(
      LiveBoardHas(out.str(), R"((^|\n)[0-9]{2}:[0-9]{2}:[0-9]{2} gpu04 +- +error: No route)"))
      << out.str();
}

TEST(LiveBoard, ManyDifferentRowsEndWithHowManyMoreNodesAreAtWork) {
  std::ostringstream out;
  BoardOptions options = Quiet(false);
  options.height = 8;  // room for 3 rows
  std::vector<std::string> nodes;
  for (int i = 1; i <= 6; ++i) nodes.push_back("n" + std::to_string(i));
  LiveBoard board(out, options, nodes);
  board.PhaseStarted("apply");
  for (int i = 1; i <= 6; ++i) {
    board.CommandStarted("n" + std::to_string(i), "step" + std::to_string(i), Activity::kChange,
                         "");
  }
  const auto lines = board.Render(Clock::now());
  ASSERT_EQ(lines.size(), 4U) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines[0], HasSubstr("n1 "));
  EXPECT_THAT(lines[1], HasSubstr("n2 "));
  EXPECT_EQ(lines[2], "  ... and 4 more nodes at work");
}

TEST(LiveBoard, TerminalFramesEraseThePreviousBoardAndKeepFinishedLinesAbove) {
  std::ostringstream out;
  LiveBoard board(out, Quiet(true), {"worker1", "worker2", "worker3"});
  const Plan plan = ThreeWorkers();
  board.Expect(plan);
  board.PhaseStarted("apply");
  board.CommandStarted("worker1", "gpu.driver", Activity::kChange, "");
  board.Tick(Clock::now());
  const std::string first = out.str();
  // Two board lines drawn, no line written above them yet.
  EXPECT_THAT(first, Not(HasSubstr("\x1b[")));
  EXPECT_THAT(first, HasSubstr("worker1       gpu.driver"));

  out.str("");
  board.ItemUpdated(Ended(plan, "worker1", "gpu.driver", ItemState::kApplied));
  board.Tick(Clock::now());
  const std::string second = out.str();
  // Up over the two lines, clear, the finished line, then the board again.
  EXPECT_EQ(second.rfind("\r\x1b[2A\x1b[J", 0), 0U) << second;
  const auto finished = second.find("gpu.driver                   applied");
  const auto summary = second.find("1/6 steps");
  ASSERT_NE(finished, std::string::npos) << second;
  ASSERT_NE(summary, std::string::npos) << second;
  EXPECT_LT(finished, summary);
  EXPECT_FALSE(LiveBoardHas(second, R"([0-9]{2}:[0-9]{2}:[0-9]{2})"))
      << "no time of day on a terminal";

  out.str("");
  board.Hide();
  EXPECT_EQ(out.str(), "\r\x1b[2A\x1b[J") << "hidden: only the erase";
  out.str("");
  board.Tick(Clock::now());
  EXPECT_EQ(out.str(), "") << "a hidden board is not redrawn";
}

TEST(LiveBoard, TerminalLinesAreCutToTheWidth) {
  std::ostringstream out;
  BoardOptions options = Quiet(true);
  options.width = 40;
  LiveBoard board(out, options, {"a-node-with-a-rather-long-name"});
  board.PhaseStarted("apply");
  board.CommandStarted("a-node-with-a-rather-long-name", "monitoring.prometheus-stack",
                       Activity::kChange, "");
  board.Tick(Clock::now());
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 39U + 2) << line;  // 39 columns, "…" is 3 bytes for 1
  }
}

TEST(LiveBoard, PlainOutputWritesTheBoardAsTimestampedLinesEveryHeartbeat) {
  std::ostringstream out;
  BoardOptions options = Quiet(false);
  options.heartbeat = seconds(30);
  LiveBoard board(out, options, {"master1", "worker1"});
  const auto t0 = Clock::now();
  board.PhaseStarted("apply");
  board.CommandStarted("master1", "k8s.gpu-operator", Activity::kChange, "");
  board.Tick(t0 + seconds(10));
  EXPECT_EQ(out.str(), "") << "not due yet";
  board.Tick(t0 + seconds(31));
  const std::string beat = out.str();
  EXPECT_TRUE(LiveBoardHas(beat, R"(^[0-9:]{8} == apply )")) << beat;
  EXPECT_TRUE(LiveBoardHas(beat, R"(\n[0-9:]{8}   master1 +k8s\.gpu-operator +change  3[01]s\n$)"))
      << beat;
  out.str("");
  board.Tick(t0 + seconds(45));
  EXPECT_EQ(out.str(), "") << "the next one is due 30 s after the last";
  board.CommandFinished("master1", "k8s.gpu-operator", Activity::kChange, {});
  board.Tick(t0 + seconds(70));
  EXPECT_EQ(out.str(), "") << "nothing at work: nothing to say";
}

TEST(LiveBoard, AFinishedLineSaysHowLongTheChangeTook) {
  std::ostringstream out;
  LiveBoard board(out, Quiet(false), {"worker1"});
  const Plan plan = ThreeWorkers();
  board.PhaseStarted("apply");
  board.CommandStarted("worker1", "gpu.driver", Activity::kChange, "");
  board.ItemUpdated(Ended(plan, "worker1", "gpu.driver", ItemState::kApplied));
  board.CommandStarted("worker1", "k8s.join", Activity::kChange, "");
  PlanItem failed = Ended(plan, "worker1", "k8s.join", ItemState::kFailed);
  failed.detail = "kubeadm join: exit 1";
  board.ItemUpdated(failed);
  EXPECT_TRUE(LiveBoardHas(out.str(), R"(gpu\.driver +applied in [0-9]+\.[0-9]s\n)")) << out.str();
  EXPECT_TRUE(
      LiveBoardHas(out.str(), R"(k8s\.join +failed after [0-9]+\.[0-9]s: kubeadm join: exit 1)"))
      << out.str();
}

TEST(LiveBoard, ATerminalGetsABoardOnlyOutsideCiWithoutVerboseAndNotDumb) {
  EXPECT_TRUE(BoardFitsTerminal(true, nullptr, "xterm-256color", 0));
  EXPECT_TRUE(BoardFitsTerminal(true, "", "screen", 0));
  EXPECT_TRUE(BoardFitsTerminal(true, "false", "tmux-256color", 0));
  EXPECT_FALSE(BoardFitsTerminal(false, nullptr, "xterm", 0));
  EXPECT_FALSE(BoardFitsTerminal(true, "true", "xterm", 0));
  EXPECT_FALSE(BoardFitsTerminal(true, "1", "xterm", 0));
  EXPECT_FALSE(BoardFitsTerminal(true, nullptr, "dumb", 0));
  EXPECT_FALSE(BoardFitsTerminal(true, nullptr, "xterm", 1));
}

TEST(LiveBoard, EventsFromManyThreadsAndTheTickerDoNotRace) {
  std::ostringstream out;
  BoardOptions options = Quiet(true);
  options.ticker = true;
  options.redraw = std::chrono::milliseconds(1);
  std::vector<std::string> nodes;
  for (int i = 0; i < 8; ++i) nodes.push_back("n" + std::to_string(i));
  {
    LiveBoard board(out, options, nodes);
    board.PhaseStarted("apply");
    std::vector<std::thread> threads;
    for (const std::string& node : nodes) {
      threads.emplace_back([&board, node] {
        for (int i = 0; i < 200; ++i) {
          board.CommandStarted(node, "s" + std::to_string(i), Activity::kChange, "");
          board.Note(node, "rebooting");
          board.CommandFinished(node, "s" + std::to_string(i), Activity::kChange, {});
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  // The board was erased at the end: after the last erase come only the
  // lines that scroll (the notes), no board.
  const std::string text = out.str();
  const auto erase = text.rfind("\x1b[J");
  ASSERT_NE(erase, std::string::npos);
  EXPECT_FALSE(LiveBoardHas(text.substr(erase), "apply \\[")) << text.substr(erase);
}

}  // namespace
}  // namespace gpuctl
