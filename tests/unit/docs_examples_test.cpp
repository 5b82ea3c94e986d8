// Every gpuctl command that README.md and docs/*.md show in a code block is
// given to the real command line, parse only (GPUCTL_PARSE_ONLY): its
// subcommand and options exist and take the values written. An example a
// reader copies must not fail on a renamed flag. (What the examples do is
// run for real by the lab tests and the demo.)
#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "gpuctl/util/shell_quote.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

struct Example {
  std::string where;    // file:line
  std::string command;  // from "gpuctl" to the end of that command
};

// The gpuctl commands in a Markdown file's fenced code blocks: a line's own
// (after an optional "$ " prompt), or one after "&&", up to a comment, a
// pipe, a redirection or the next command.
std::vector<Example> ExamplesIn(const fs::path& file) {
  std::vector<Example> examples;
  std::ifstream in(file);
  bool fenced = false;
  int number = 0;
  static const std::regex kCommand(R"((?:^\s*(?:\$ )?|&&\s*)(gpuctl(?:\s[^|#;&<>]*|$)))");
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find("```") != std::string::npos) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) {
      continue;
    }
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kCommand);
         it != std::sregex_iterator(); ++it) {
      std::string command = (*it)[1].str();
      while (!command.empty() && (command.back() == ' ' || command.back() == '\\')) {
        command.pop_back();
      }
      examples.push_back({file.filename().string() + ":" + std::to_string(number), command});
    }
  }
  return examples;
}

std::vector<Example> AllExamples() {
  std::vector<Example> all = ExamplesIn(fs::path(GPUCTL_SOURCE_DIR) / "README.md");
  for (const auto& entry : fs::directory_iterator(fs::path(GPUCTL_SOURCE_DIR) / "docs")) {
    if (entry.path().extension() == ".md") {
      const auto found = ExamplesIn(entry.path());
      all.insert(all.end(), found.begin(), found.end());
    }
  }
  return all;
}

// Runs `command` (its first word is gpuctl) through sh, parse only, with the
// variables examples use set to stand-in values. Exit status and output.
std::pair<int, std::string> ParseOnly(const std::string& command) {
  const std::string script =
      "LAB_INVENTORY=inventory.yaml LAB_KEY=key LAB_KNOWN_HOSTS=known_hosts "
      "GPUCTL_PARSE_ONLY=1; export GPUCTL_PARSE_ONLY; gpuctl() { " +
      ShellQuote(GPUCTL_BINARY) + " \"$@\"; }; " + command + " 2>&1";
  FILE* pipe = popen(("sh -c " + ShellQuote(script)).c_str(), "r");
  std::string out;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    out += buffer;
  }
  return {WEXITSTATUS(pclose(pipe)), out};
}

TEST(DocsExamples, EveryGpuctlCommandInTheDocsParses) {
  const auto examples = AllExamples();
  // README's quick start alone has a dozen: finding none means the scan broke.
  ASSERT_GT(examples.size(), 20U);
  for (const Example& example : examples) {
    const auto [status, out] = ParseOnly(example.command);
    EXPECT_EQ(status, 0) << example.where << ": " << example.command << "\n" << out;
  }
}

TEST(DocsExamples, AMistypedOptionInAnExampleWouldBeCaught) {
  EXPECT_NE(ParseOnly("gpuctl plan --hide-okk inventory.yaml").first, 0);
  EXPECT_NE(ParseOnly("gpuctl aply inventory.yaml").first, 0);
  EXPECT_EQ(ParseOnly("gpuctl plan --hide-ok inventory.yaml").first, 0);
}

TEST(DocsExamples, TheScanFindsCommandsAfterAPromptAndAfterAnd) {
  const fs::path file = fs::temp_directory_path() / "gpuctl-docs-examples-test.md";
  std::ofstream(file) << "gpuctl plan outside.yaml\n"
                         "```sh\n"
                         "$ gpuctl runs --cluster demo   # a comment\n"
                         "gpuctl lab up --name pc && gpuctl apply --yes inv.yaml | tee log\n"
                         "```\n";
  const auto found = ExamplesIn(file);
  fs::remove(file);
  ASSERT_EQ(found.size(), 3U);
  EXPECT_EQ(found[0].command, "gpuctl runs --cluster demo");
  EXPECT_EQ(found[0].where, "gpuctl-docs-examples-test.md:3");
  EXPECT_EQ(found[1].command, "gpuctl lab up --name pc");
  EXPECT_EQ(found[2].command, "gpuctl apply --yes inv.yaml");
}

}  // namespace
}  // namespace gpuctl
