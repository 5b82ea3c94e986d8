// Run history: runs listed from their journals' first and last lines,
// found by id, prefix or "last", and one run's events filtered by node and
// step, as `gpuctl runs` and `gpuctl logs` show them.
#include "gpuctl/run/run_history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gpuctl/view/runs_view.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class RunHistoryTest : public ::testing::Test {
 protected:
  RunHistoryTest() {
    char dir[] = "/tmp/gpuctl-run-history.XXXXXX";
    state = mkdtemp(dir);
  }
  ~RunHistoryTest() override { fs::remove_all(state); }

  void Journal(const std::string& cluster, const std::string& id,
               const std::vector<std::string>& lines) {
    const fs::path dir = state / cluster / "runs" / id;
    fs::create_directories(dir);
    std::ofstream out(dir / "journal.jsonl");
    for (const auto& line : lines) {
      out << line << '\n';
    }
  }

  static std::string Run(const std::string& time, const std::string& command) {
    return nlohmann::json{{"time", time},
                          {"event", "run"},
                          {"node", ""},
                          {"command", command},
                          {"inventory", "inv.yaml"}}
        .dump();
  }
  static std::string Finish(const std::string& time, const std::string& outcome, int changed) {
    return nlohmann::json{{"time", time},       {"event", "finish"}, {"node", ""},
                          {"outcome", outcome}, {"seconds", 255.0},  {"nodes", 4},
                          {"changed", changed}, {"ok", 20},          {"failed", 1},
                          {"blocked", 0},       {"rebooted", 2}}
        .dump();
  }
  static std::string End(const std::string& node, const std::string& step) {
    return nlohmann::json{
        {"time", "2026-11-24T10:00:05Z"}, {"event", "end"},   {"node", node}, {"step", step},
        {"activity", "change"},           {"exit", 0},        {"ms", 1500},   {"timed_out", false},
        {"stdout_tail", "installed\n"},   {"stderr_tail", ""}}
        .dump();
  }

  fs::path state;
};

TEST_F(RunHistoryTest, RunsAreListedOldestFirstWithHowEachEnded) {
  Journal("demo", "20261124T100000Z-7",
          {Run("2026-11-24T10:00:00Z", "gpuctl apply --yes inv.yaml"), End("worker1", "k8s.join"),
           Finish("2026-11-24T10:04:15Z", "failed", 25)});
  Journal("slurm", "20261123T090000Z-3", {Run("2026-11-23T09:00:00Z", "gpuctl apply s.yaml")});
  const auto runs = ListRuns(state.string(), "");
  ASSERT_EQ(runs.size(), 2U);
  EXPECT_EQ(runs[0].id, "20261123T090000Z-3");
  EXPECT_EQ(runs[0].cluster, "slurm");
  EXPECT_FALSE(runs[0].finished);
  EXPECT_EQ(runs[0].outcome, "unfinished");
  EXPECT_EQ(runs[1].outcome, "failed");
  EXPECT_EQ(runs[1].changed, 25U);
  EXPECT_EQ(runs[1].failed, 1U);
  EXPECT_EQ(runs[1].rebooted, 2U);
  EXPECT_DOUBLE_EQ(runs[1].seconds, 255.0);
  EXPECT_EQ(runs[1].command, "gpuctl apply --yes inv.yaml");

  const auto demo = ListRuns(state.string(), "demo");
  ASSERT_EQ(demo.size(), 1U);
  EXPECT_EQ(demo[0].cluster, "demo");
}

TEST_F(RunHistoryTest, AnUnfinishedRunLastsUntilItsLastLineAndATornLineIsSkipped) {
  Journal("demo", "20261124T100000Z-7",
          {Run("2026-11-24T10:00:00Z", "gpuctl apply inv.yaml"), End("worker1", "k8s.join"),
           R"({"time":"2026-11-24T10:09:0)"});
  const auto runs = ListRuns(state.string(), "");
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_FALSE(runs[0].finished);
  EXPECT_DOUBLE_EQ(runs[0].seconds, 5.0) << "from the run event to the last whole line";
}

TEST_F(RunHistoryTest, AJournalOlderThanTheRunEventStillLists) {
  Journal("demo", "20261101T000000Z-1", {End("worker1", "os.sysctl")});
  const auto runs = ListRuns(state.string(), "");
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].command, "");
  EXPECT_EQ(runs[0].started, "2026-11-24T10:00:05Z");
  std::ostringstream text;
  WriteRunsText(text, runs);
  EXPECT_THAT(text.str(), HasSubstr("unknown"));
}

TEST_F(RunHistoryTest, ARunIsFoundByIdByAUniquePrefixOrAsTheLast) {
  Journal("demo", "20261124T100000Z-7", {Run("2026-11-24T10:00:00Z", "a")});
  Journal("demo", "20261124T110000Z-8", {Run("2026-11-24T11:00:00Z", "b")});
  const auto runs = ListRuns(state.string(), "");
  std::string why;
  EXPECT_EQ(FindRun(runs, "last", why)->command, "b");
  EXPECT_EQ(FindRun(runs, "20261124T10", why)->command, "a");
  EXPECT_EQ(FindRun(runs, "20261124T110000Z-8", why)->command, "b");
  EXPECT_FALSE(FindRun(runs, "20261124T1", why));
  EXPECT_THAT(why, HasSubstr("names 2 runs"));
  EXPECT_FALSE(FindRun(runs, "2025", why));
  EXPECT_THAT(why, HasSubstr("gpuctl runs lists them"));
  EXPECT_FALSE(FindRun({}, "last", why));
  EXPECT_EQ(why, "no runs on record");
}

TEST_F(RunHistoryTest, LogsKeepOneNodeOrOneStepGroupAndTheRunsFrame) {
  Journal("demo", "20261124T100000Z-7",
          {Run("2026-11-24T10:00:00Z", "gpuctl apply inv.yaml"), End("worker1", "k8s.join"),
           End("worker2", "k8s.join"), End("worker1", "os.sysctl"),
           Finish("2026-11-24T10:04:15Z", "applied", 3)});
  const auto runs = ListRuns(state.string(), "");
  const auto lines = [&](const LogFilter& filter) {
    std::string text;
    std::string why;
    EXPECT_TRUE(ReadRunEvents(
        runs.front(), filter, [&](const nlohmann::json& e) { text += LogEventText(e); }, why))
        << why;
    return text;
  };
  const std::string worker1 = lines({"worker1", ""});
  EXPECT_THAT(worker1, HasSubstr("worker1 k8s.join change exit 0 (1.5s)"));
  EXPECT_THAT(worker1, HasSubstr("    | installed"));
  EXPECT_THAT(worker1, Not(HasSubstr("worker2")));
  EXPECT_THAT(worker1, HasSubstr("run: gpuctl apply inv.yaml"));
  EXPECT_THAT(worker1, HasSubstr("finished: applied in 4m15s (4 nodes: 3 changed"));

  const std::string k8s = lines({"", "k8s"});
  EXPECT_THAT(k8s, HasSubstr("worker2 k8s.join"));
  EXPECT_THAT(k8s, Not(HasSubstr("os.sysctl")));
  EXPECT_THAT(lines({"", "k8"}), Not(HasSubstr("k8s.join"))) << "a group is a whole word";
}

TEST_F(RunHistoryTest, RunsAsJsonCarryTheirFormat) {
  Journal("demo", "20261124T100000Z-7",
          {Run("2026-11-24T10:00:00Z", "x"), Finish("2026-11-24T10:04:15Z", "applied", 3)});
  std::ostringstream out;
  WriteRunsJson(out, ListRuns(state.string(), ""));
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["format"], "gpuctl.runs/v1");
  EXPECT_EQ(doc["runs"][0]["outcome"], "applied");
  EXPECT_EQ(doc["runs"][0]["changed"], 3);
}

}  // namespace
}  // namespace gpuctl
