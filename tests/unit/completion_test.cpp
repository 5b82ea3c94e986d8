// gpuctl completion and gpuctl man, generated from the command tree: the
// bash script is sourced in a real bash and asked what readline would ask;
// the zsh and fish scripts parse in their shells (where installed); the
// manual lists every command, and the build dir holds what the package
// installs.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "gpuctl/util/shell_quote.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

struct CompletionShRun {
  int status = -1;
  std::string out;
};

CompletionShRun CompletionSh(const std::string& command) {
  CompletionShRun run;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) run.out += buffer;
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// What bash completes for `words` (the last one being completed), with
// gpuctl's script sourced: COMPREPLY, one per line.
std::string BashCompletes(const std::string& words) {
  const std::string script = "source <(" + ShellQuote(GPUCTL_BINARY) +
                             " completion bash) && COMP_WORDS=(" + words +
                             ") && COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )) && _gpuctl && "
                             "printf '%s\\n' \"${COMPREPLY[@]}\"";
  return CompletionSh("bash -c " + ShellQuote(script) + " 2>&1").out;
}

TEST(Completion, BashRegistersAndCompletesCommandsOptionsAndValues) {
  const CompletionShRun registered =
      CompletionSh("bash -c " +
                   ShellQuote("source <(" + ShellQuote(GPUCTL_BINARY) +
                              " completion bash) && complete -p gpuctl") +
                   " 2>&1");
  EXPECT_EQ(registered.status, 0) << registered.out;
  EXPECT_EQ(registered.out, "complete -o default -F _gpuctl gpuctl\n");
  // gpuctl pl<TAB>
  EXPECT_EQ(BashCompletes("gpuctl pl"), "plan\n");
  EXPECT_EQ(BashCompletes("gpuctl --no-color ch"), "check\n");
  EXPECT_EQ(BashCompletes("gpuctl plan --hide"), "--hide-ok\n");
  EXPECT_EQ(BashCompletes("gpuctl validate -o ''"), "text\njson\n");
  EXPECT_EQ(BashCompletes("gpuctl completion ''"), "bash\nzsh\nfish\n");
  // --only: the catalog's groups and step ids, after a comma too.
  EXPECT_NE(BashCompletes("gpuctl apply --only k8").find("k8s.join\n"), std::string::npos);
  EXPECT_NE(BashCompletes("gpuctl apply --only k8s,gpu.dr").find("k8s,gpu.driver\n"),
            std::string::npos);
  // Hidden commands are not offered.
  EXPECT_EQ(BashCompletes("gpuctl ma"), "\n");
}

TEST(Completion, ZshAndFishScriptsParse) {
  for (const char* shell : {"zsh", "fish"}) {
    if (CompletionSh(std::string("command -v ") + shell + " >/dev/null").status != 0) {
      std::printf("%s not installed: its script is not checked here\n", shell);
      continue;
    }
    const CompletionShRun parse = CompletionSh(ShellQuote(GPUCTL_BINARY) + " completion " + shell +
                                               " | " + shell + " -n 2>&1");
    EXPECT_EQ(parse.status, 0) << shell << ": " << parse.out;
  }
  if (CompletionSh("command -v fish >/dev/null").status == 0) {
    const CompletionShRun fish = CompletionSh("fish -c " +
                                              ShellQuote(ShellQuote(GPUCTL_BINARY) +
                                                         " completion fish | source; complete -C "
                                                         "'gpuctl pl'") +
                                              " 2>&1");
    EXPECT_EQ(fish.out.rfind("plan\t", 0), 0U) << fish.out;
  }
}

TEST(Completion, ManPageListsEveryCommandAndTheBuildHasIt) {
  const CompletionShRun man = CompletionSh(ShellQuote(GPUCTL_BINARY) + " man");
  ASSERT_EQ(man.status, 0);
  EXPECT_EQ(man.out.rfind(".\\\" gpuctl(1)", 0), 0U) << man.out.substr(0, 200);
  EXPECT_NE(man.out.find(".TH GPUCTL 1"), std::string::npos);
  for (const char* command : {"validate", "plan", "apply", "check", "init", "completion"}) {
    EXPECT_NE(man.out.find(std::string(".SS \\fBgpuctl ") + command), std::string::npos) << command;
  }
  EXPECT_NE(man.out.find("\\fB\\-\\-only\\fR"), std::string::npos);
  EXPECT_EQ(man.out.find(".SS \\fBgpuctl man"), std::string::npos) << "hidden";
  // The build runs `gpuctl man` and `gpuctl completion` into its dir.
  const fs::path build = fs::path(GPUCTL_BINARY).parent_path();
  for (const char* file : {"gpuctl.1", "gpuctl.1.gz", "completions/gpuctl", "completions/_gpuctl",
                           "completions/gpuctl.fish"}) {
    EXPECT_TRUE(fs::exists(build / file)) << file;
  }
  if (CompletionSh("command -v man >/dev/null").status == 0) {
    const CompletionShRun rendered = CompletionSh(
        "MANWIDTH=80 man -l " + ShellQuote((build / "gpuctl.1").string()) + " 2>&1 >/dev/null");
    EXPECT_EQ(rendered.out, "") << "man's warnings";
  }
}

}  // namespace
}  // namespace gpuctl
