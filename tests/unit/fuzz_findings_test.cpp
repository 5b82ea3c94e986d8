// What scripts/fuzz.sh found (tests/fuzz), one test per finding, each with
// the smallest input that showed it. Before its fix each of these crashed the
// process or never returned.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpuctl/run/drift.h"
#include "gpuctl/run/journal.h"
#include "gpuctl/run/probe_batch.h"
#include "gpuctl/util/utf8.h"
#include "gpuctl/view/plan_view.h"

namespace gpuctl {
namespace {

// A plan of one node and two items, as `plan --out` would save it.
Plan TwoItems() {
  PlanItem a;
  a.id = 0;
  a.node = "worker1";
  a.step = "os.sysctl";
  a.state = ItemState::kSatisfied;
  PlanItem b;
  b.id = 1;
  b.node = "worker1";
  b.step = "gpu.driver";
  b.state = ItemState::kNeedsChange;
  b.after = {0};
  return Plan::FromItems({"worker1"}, {a, b});
}

TEST(FuzzFinding, BatchScriptWithAnExportLineWithoutValueIsNotABatch) {
  // One good entry, then one whose export line has no '=' anywhere after it:
  // the parser read the value from the script's start, went back to the
  // first entry and added it again, forever.
  const std::string script =
      BuildBatchScript("", {{0, "exit 0", {}}}, "n") + "printf '\\n@@n 1 begin\\n'\n(\nexport X\n";
  std::string nonce;
  std::vector<BatchEntry> entries;
  EXPECT_FALSE(ParseBatchScript(script, nonce, entries));
}

TEST(FuzzFinding, BatchScriptWithANonNumericIdIsNotABatch) {
  // std::stoul threw std::invalid_argument out of the fake transport.
  const std::string script = "printf '\\n@@n x begin\\n'\n(\nexit 0\n) </dev/null\ngpuctl_rc=$?\n";
  std::string nonce;
  std::vector<BatchEntry> entries;
  EXPECT_FALSE(ParseBatchScript(script, nonce, entries));
}

TEST(FuzzFinding, BatchScriptEndingInAnExportIsNotABatch) {
  // Stepping over the export's newline went past the end, and
  // std::string::compare threw std::out_of_range.
  const std::string script = "printf '\\n@@n 0 begin\\n'\n(\nexport X='v'";
  std::string nonce;
  std::vector<BatchEntry> entries;
  EXPECT_FALSE(ParseBatchScript(script, nonce, entries));
}

TEST(FuzzFinding, SavedPlanWithAnEdgeToAMissingItemIsRefused) {
  // Plan::FromItems threw std::out_of_range, which apply does not catch.
  nlohmann::json doc = PlanToJson(TwoItems(), {}, {});
  doc["items"][1]["after"] = {7};
  try {
    (void)PlanFromJson(doc, "p.json");
    FAIL() << "a plan with a dangling edge was accepted";
  } catch (const LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("item 1: 'after' names item 7"), std::string::npos)
        << e.what();
  }
}

TEST(FuzzFinding, JournalLinesThatAreNotEventsAreSkipped) {
  // nlohmann::json::value threw on a line that was JSON but not an object,
  // or whose field was not a string, and the next apply died reading it.
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpuctl-fuzz-finding-" + std::to_string(getpid()) + ".jsonl");
  {
    std::ofstream out(path);
    out << "1\n[\"change\"]\n\"text\"\n{\"activity\": 5, \"event\": \"start\"}\n"
        << R"({"event": "start", "activity": "change", "node": "w1", "step": "gpu.driver"})"
        << '\n';
  }
  const auto unfinished = UnfinishedSteps(path.string());
  std::filesystem::remove(path);
  const std::vector<std::pair<std::string, std::string>> want = {{"w1", "gpu.driver"}};
  EXPECT_EQ(unfinished, want);
}

TEST(FuzzFinding, ProbeOutputThatIsNotUtf8IsSavedAndReadsBackWithoutDrift) {
  // A probe printing Latin-1 (or output cut mid-character by the cap) made
  // nlohmann::json throw type_error 316 when `plan --out` wrote the plan.
  Plan plan = TwoItems();
  plan.items()[1].observed = "caf\xE9 \xE2\x82";
  plan.items()[1].detail = "\xFF";
  const std::string saved = PlanToJson(plan, {}, {{"worker1", "sshd: \xC0\xAF"}}).dump(2);
  const SavedPlan back = PlanFromJson(nlohmann::json::parse(saved), "p.json");
  EXPECT_EQ(back.plan.items()[1].observed, "caf\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(back.plan.items()[1].detail, "\xEF\xBF\xBD");
  // apply plan.json re-probes and compares: the same bytes are no drift.
  EXPECT_TRUE(CompareWithSaved(back.plan, plan).empty());
  plan.items()[1].observed = "cafe";
  EXPECT_EQ(CompareWithSaved(back.plan, plan).size(), 1U);
}

TEST(FuzzFinding, ValidUtf8KeepsWellFormedTextAndReplacesEveryOtherByte) {
  const std::string kFffd = "\xEF\xBF\xBD";
  EXPECT_EQ(ValidUtf8("plain ascii\n"), "plain ascii\n");
  EXPECT_EQ(ValidUtf8("\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(ValidUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_EQ(ValidUtf8("\xFF"), kFffd);
  EXPECT_EQ(ValidUtf8("\xE2\x82"), kFffd + kFffd);                                 // cut short
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), kFffd + kFffd);                                 // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);                     // a surrogate
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80x"), kFffd + kFffd + kFffd + kFffd + "x");  // > U+10FFFF
  EXPECT_EQ(ValidUtf8("\x80\xC3\xA9"), kFffd + "\xC3\xA9");  // stray continuation
}

}  // namespace
}  // namespace gpuctl
