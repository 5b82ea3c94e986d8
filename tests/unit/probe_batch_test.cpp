#include "gpuctl/run/probe_batch.h"
#include "gpuctl/util/shell_quote.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace gpuctl {
namespace {

// Runs a script with the local sh, as a node would, capturing both streams.
CommandResult RunSh(const std::string& script) {
  char path[] = "/tmp/gpuctl-batch-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  std::fputs(script.c_str(), f);
  std::fclose(f);
  const std::string err_path = std::string(path) + ".err";
  CommandResult r;
  FILE* pipe = popen(("sh -s < " + std::string(path) + " 2>" + err_path).c_str(), "r");
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  r.exit_status = pclose(pipe);
  FILE* e = std::fopen(err_path.c_str(), "r");
  while ((n = std::fread(buffer, 1, sizeof(buffer), e)) > 0) r.err.append(buffer, n);
  std::fclose(e);
  std::remove(path);
  std::remove(err_path.c_str());
  return r;
}

TEST(ProbeBatch, EachScriptGetsItsOwnExitStatusOutputAndEnvironment) {
  const std::vector<BatchEntry> entries{
      {4, "echo \"one $GPUCTL_X\"\nexit 0", {{"GPUCTL_X", "it's \"quoted\"\nand two lines"}}},
      {7, "echo two; echo oops >&2; exit 1", {}},
      {9, "printf 'no newline'; exit 3", {{"GPUCTL_X", "other"}}},
      {12, "echo \"x=${GPUCTL_X:-unset}\"", {}},
  };
  const std::string nonce = MakeNonce();
  const CommandResult run = RunSh(BuildBatchScript("helper() { echo helped; }", entries, nonce));
  const auto results = SplitBatchOutput(run.out, run.err, nonce);
  ASSERT_EQ(results.size(), 4U) << run.out << run.err;
  EXPECT_EQ(results.at(4).exit_status, 0);
  EXPECT_EQ(results.at(4).out, "one it's \"quoted\"\nand two lines\n");
  EXPECT_EQ(results.at(7).exit_status, 1);
  EXPECT_EQ(results.at(7).out, "two\n");
  EXPECT_EQ(results.at(7).err, "oops\n");
  EXPECT_EQ(results.at(9).exit_status, 3);
  EXPECT_EQ(results.at(9).out, "no newline");
  // Environment does not leak from one entry to the next.
  EXPECT_EQ(results.at(12).out, "x=unset\n");
}

TEST(ProbeBatch, AScriptReadingStdinCannotEatTheRestOfTheBatch) {
  const std::vector<BatchEntry> entries{{1, "cat; read line; echo read-done", {}},
                                        {2, "echo still-here", {}}};
  const std::string nonce = MakeNonce();
  const CommandResult run = RunSh(BuildBatchScript("", entries, nonce));
  const auto results = SplitBatchOutput(run.out, run.err, nonce);
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results.at(1).out, "read-done\n");
  EXPECT_EQ(results.at(2).out, "still-here\n");
}

TEST(ProbeBatch, PreludeFunctionsAreVisibleToEveryScript) {
  const std::string nonce = MakeNonce();
  const CommandResult run = RunSh(
      BuildBatchScript("helper() { echo helped; }", {{1, "helper", {}}, {2, "helper", {}}}, nonce));
  const auto results = SplitBatchOutput(run.out, run.err, nonce);
  EXPECT_EQ(results.at(2).out, "helped\n");
}

TEST(ProbeBatch, FactsAreGatheredOnceForEveryEntry) {
  // The gatherer runs in the batch's shell, with the entries' OS family, once;
  // each entry's subshell sees what it set, and what an entry changes stays
  // in that entry.
  const std::string prelude =
      "gpuctl_gather_facts() { gathered=\"$1 $((${gathered_n:-0} + 1))\"; "
      "gathered_n=$((${gathered_n:-0} + 1)); }";
  const std::vector<BatchEntry> entries{
      {1, "echo \"$gathered\"; gathered=changed", {{"GPUCTL_OS_FAMILY", "rhel"}}},
      {2, "echo \"$gathered\"", {{"GPUCTL_OS_FAMILY", "rhel"}}},
  };
  const std::string nonce = MakeNonce();
  const std::string script = BuildBatchScript(prelude, entries, nonce);
  EXPECT_NE(script.find("if command -v gpuctl_gather_facts >/dev/null 2>&1; then "
                        "gpuctl_gather_facts 'rhel'; fi\n"),
            std::string::npos)
      << script;
  const CommandResult run = RunSh(script);
  const auto results = SplitBatchOutput(run.out, run.err, nonce);
  ASSERT_EQ(results.size(), 2U) << run.out << run.err;
  EXPECT_EQ(results.at(1).out, "rhel 1\n");
  EXPECT_EQ(results.at(2).out, "rhel 1\n");
  // The fake transport still reads the entries back.
  std::string parsed_nonce;
  std::vector<BatchEntry> parsed;
  ASSERT_TRUE(ParseBatchScript(script, parsed_nonce, parsed));
  EXPECT_EQ(parsed.size(), 2U);
}

TEST(ProbeBatch, APreludeWithoutAGathererRunsAsBefore) {
  const std::string nonce = MakeNonce();
  const CommandResult run =
      RunSh(BuildBatchScript("", {{1, "echo ok", {{"GPUCTL_OS_FAMILY", "debian"}}}}, nonce));
  const auto results = SplitBatchOutput(run.out, run.err, nonce);
  ASSERT_EQ(results.size(), 1U) << run.out << run.err;
  EXPECT_EQ(results.at(1).out, "ok\n");
  EXPECT_EQ(results.at(1).err, "");
}

TEST(ProbeBatch, NoGatherWithoutOneFamily) {
  // Entries of two families, or without one: the helpers ask live.
  EXPECT_EQ(GatherFactsCall({{1, "true", {{"GPUCTL_OS_FAMILY", "debian"}}},
                             {2, "true", {{"GPUCTL_OS_FAMILY", "rhel"}}}}),
            "");
  EXPECT_EQ(GatherFactsCall({{1, "true", {}}}), "");
  EXPECT_EQ(GatherFactsCall({}), "");
  EXPECT_EQ(GatherFactsCall({{1, "true", {{"GPUCTL_OS_FAMILY", "it's"}}}}),
            "if command -v gpuctl_gather_facts >/dev/null 2>&1; then gpuctl_gather_facts "
            "'it'\\''s'; fi\n");
}

TEST(ProbeBatch, AnEntryCutOffBeforeItsEndMarkerIsAbsent) {
  const std::string nonce = "n0";
  const std::string out = "\n@@n0 1 begin\nfine\n\n@@n0 1 end 0\n\n@@n0 2 begin\nhalf";
  const auto results = SplitBatchOutput(out, "", nonce);
  ASSERT_EQ(results.size(), 1U);
  EXPECT_EQ(results.at(1).out, "fine\n");
}

TEST(ProbeBatch, MarkersWithAnotherNonceAreJustOutput) {
  const std::string out = "\n@@n0 1 begin\n@@other 1 end 0\n\n@@n0 1 end 1\n";
  const auto results = SplitBatchOutput(out, "", "n0");
  EXPECT_EQ(results.at(1).out, "@@other 1 end 0\n");
  EXPECT_EQ(results.at(1).exit_status, 1);
}

TEST(ProbeBatch, MarkersReadAsTheyAlwaysWere) {
  // Blanks before a field, a sign, an end without a status, a word that only
  // starts like one: read as the sscanf("%zu %7s %d") this replaced read them.
  const std::string out =
      "\n@@n0  1 begin\na\n\n@@n0 1 end  +3\n"
      "\n@@n0 2 begin\nb\n@@n0 2 ending 0\n@@n0 x end 0\n\n@@n0 2 end\n"
      "\n@@n0 3 begin\n\n@@n0 3 end -2\n";
  const auto results = SplitBatchOutput(out, "", "n0");
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(results.at(1).exit_status, 3);
  EXPECT_EQ(results.at(1).out, "a\n");
  EXPECT_EQ(results.at(2).exit_status, -1);
  EXPECT_EQ(results.at(2).out, "b\n@@n0 2 ending 0\n@@n0 x end 0\n");
  EXPECT_EQ(results.at(3).exit_status, -2);
  EXPECT_EQ(results.at(3).out, "");
}

TEST(ProbeBatch, TheScriptIsTheSameTextAsEver) {
  // What a node's shell receives, spelled out: the fake transport and any
  // tool reading a batch back rely on it.
  const std::vector<BatchEntry> entries{{3, "probe a", {{"GPUCTL_A", "x"}}}, {8, "probe b\n", {}}};
  EXPECT_EQ(BuildBatchScript("p", entries, "nZ"),
            "p\n"
            "printf '\\n@@nZ 3 begin\\n'; printf '\\n@@nZ 3 begin\\n' >&2\n(\n"
            "export GPUCTL_A='x'\n"
            "probe a\n"
            ") </dev/null\ngpuctl_rc=$?\n"
            "printf '\\n@@nZ 3 end %s\\n' \"$gpuctl_rc\"; printf '\\n@@nZ 3 end\\n' >&2\n"
            "printf '\\n@@nZ 8 begin\\n'; printf '\\n@@nZ 8 begin\\n' >&2\n(\n"
            "probe b\n\n"
            ") </dev/null\ngpuctl_rc=$?\n"
            "printf '\\n@@nZ 8 end %s\\n' \"$gpuctl_rc\"; printf '\\n@@nZ 8 end\\n' >&2\n");
}

TEST(ShellQuote, SurvivesSingleQuotes) { EXPECT_EQ(ShellQuote("a'b"), "'a'\\''b'"); }

}  // namespace
}  // namespace gpuctl

namespace gpuctl {
namespace {

TEST(ProbeBatch, ParsesBackWhatItBuilt) {
  const std::vector<BatchEntry> entries{
      {3, "probe a\nline two", {{"GPUCTL_A", "x'y\nz"}, {"GPUCTL_OS_FAMILY", "debian"}}},
      {8, "probe b\n", {}},  // a YAML block's script ends with a newline
      {9, "", {}}};
  std::string nonce;
  std::vector<BatchEntry> parsed;
  const std::string script = BuildBatchScript("prelude() { :; }", entries, "nX");
  ASSERT_TRUE(ParseBatchScript(script, nonce, parsed));
  EXPECT_EQ(nonce, "nX");
  ASSERT_EQ(parsed.size(), 3U);
  EXPECT_EQ(parsed[0].id, 3U);
  EXPECT_EQ(parsed[0].env, entries[0].env);
  // Each script comes back exactly, so a fake node can tell it by its text.
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(parsed[i].script, entries[i].script) << "entry " << i;
  }
  EXPECT_FALSE(ParseBatchScript("echo not a batch", nonce, parsed));

  // The ids alone, without the scripts.
  std::vector<std::size_t> ids;
  nonce.clear();
  ASSERT_TRUE(BatchEntryIds(script, nonce, ids));
  EXPECT_EQ(nonce, "nX");
  EXPECT_EQ(ids, (std::vector<std::size_t>{3, 8, 9}));
  EXPECT_FALSE(BatchEntryIds("echo not a batch", nonce, ids));
  EXPECT_FALSE(BatchEntryIds("printf '\\n@@nX x begin\\n'", nonce, ids)) << "an id is digits";
}

TEST(ProbeBatch, AValueTooLongToExportIsAShellVariableAndProgramsStillStart) {
  // Exported, 200 kB in one environment string would make every exec fail
  // ("Argument list too long"); as a shell variable the script reads it.
  const std::string hosts(200000, 'h');
  const std::vector<BatchEntry> entries{
      {1,
       "printf '%s' \"$GPUCTL_HOSTS\" | wc -c\nenv | grep -c '^GPUCTL_HOSTS=' || true",
       {{"GPUCTL_HOSTS", hosts}, {"GPUCTL_OS_FAMILY", "debian"}}}};
  const std::string script = BuildBatchScript("", entries, "nL");
  const auto results = SplitBatchOutput(RunSh(script).out, "", "nL");
  EXPECT_EQ(results.at(1).exit_status, 0);
  EXPECT_EQ(results.at(1).out, "200000\n0\n");
  std::string nonce;
  std::vector<BatchEntry> parsed;
  ASSERT_TRUE(ParseBatchScript(script, nonce, parsed));
  ASSERT_EQ(parsed.size(), 1U);
  EXPECT_EQ(parsed[0].env, entries[0].env);
  EXPECT_EQ(parsed[0].script, entries[0].script);
  // A script's own first line that assigns a variable is script, not env.
  const std::vector<BatchEntry> own{{2, "f=/etc/hosts\nGPUCTL_X='y'", {}}};
  ASSERT_TRUE(ParseBatchScript(BuildBatchScript("", own, "nM"), nonce, parsed));
  EXPECT_TRUE(parsed[0].env.empty());
  EXPECT_EQ(parsed[0].script, own[0].script);
}

TEST(ProbeBatch, AppendedResultsSplitBack) {
  std::string out;
  std::string err;
  CommandResult a;
  a.exit_status = 1;
  a.out = "seen\n";
  a.err = "why\n";
  AppendBatchResult("nY", 5, a, out, err);
  const auto results = SplitBatchOutput(out, err, "nY");
  EXPECT_EQ(results.at(5).exit_status, 1);
  EXPECT_EQ(results.at(5).out, "seen\n");
  EXPECT_EQ(results.at(5).err, "why\n");
}

}  // namespace
}  // namespace gpuctl
