// The journal's lines: one JSON object each, whatever bytes a node printed,
// with the fields docs/journal.md lists.
#include "gpuctl/run/journal.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> ReadLines(const fs::path& path) {
  std::vector<nlohmann::json> events;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    events.push_back(nlohmann::json::parse(line));  // throws on a line that is not JSON
  }
  return events;
}

TEST(Journal, AnyBytesANodePrintedStayOneValidJsonLine) {
  char dir[] = "/tmp/gpuctl-journal.XXXXXX";
  const fs::path run = mkdtemp(dir);
  {
    Journal journal(run.string());
    CommandResult result;
    result.exit_status = 3;
    result.out = "quote \" backslash \\ tab\t newline\nsecond line\n";
    result.err = std::string("bad utf-8 \xff\xfe here, NUL \0 too", 29);
    journal.CommandFinished("worker1", "gpu.driver", Activity::kChange, result);
    journal.Note("worker1", "plain note");
    journal.Flush();
  }
  const auto events = ReadLines(run / "journal.jsonl");
  ASSERT_EQ(events.size(), 2U);
  const auto& end = events[0];
  EXPECT_EQ(end["event"], "end");
  EXPECT_EQ(end["node"], "worker1");
  EXPECT_EQ(end["step"], "gpu.driver");
  EXPECT_EQ(end["activity"], "change");
  EXPECT_EQ(end["exit"], 3);
  EXPECT_EQ(end["timed_out"], false);
  EXPECT_EQ(end["stdout_tail"], "quote \" backslash \\ tab\t newline\nsecond line");
  const std::string err = end["stderr_tail"];
  EXPECT_NE(err.find("bad utf-8 \xEF\xBF\xBD"), std::string::npos) << "replaced, not dropped";
  EXPECT_EQ(events[1]["message"], "plain note");
  EXPECT_EQ(events[1]["time"].get<std::string>().size(), 20U) << "2026-11-24T10:00:00Z";
  fs::remove_all(run);
}

TEST(Journal, AChangeStartIsOnDiskAtOnceAndTheRestByTheEnd) {
  char dir[] = "/tmp/gpuctl-journal.XXXXXX";
  const fs::path run = mkdtemp(dir);
  {
    Journal journal(run.string());
    CommandResult result;
    journal.CommandFinished("worker1", "os.swap", Activity::kProbe, result);
    journal.CommandStarted("worker1", "gpu.driver", Activity::kChange, "install");
    // Read while the run goes on: a run killed now leaves both lines.
    const auto now = ReadLines(run / "journal.jsonl");
    ASSERT_EQ(now.size(), 2U);
    EXPECT_EQ(now[1]["event"], "start");
    EXPECT_EQ(now[1]["activity"], "change");
    for (int i = 0; i < 1000; ++i) {
      journal.CommandFinished("worker1", "os.swap", Activity::kProbe, result);
    }
  }  // no Flush: closing the journal writes what it held
  EXPECT_EQ(ReadLines(run / "journal.jsonl").size(), 1002U);
  fs::remove_all(run);
}

}  // namespace
}  // namespace gpuctl
