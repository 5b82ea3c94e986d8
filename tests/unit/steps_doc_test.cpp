// docs/steps.md is generated from the catalog; a step added to playbooks/
// without regenerating the page fails here instead of leaving the docs stale.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRegenerate =
    "docs/steps.md is stale; regenerate it from the source tree with:\n"
    "  ./build/gpuctl --playbooks playbooks catalog --markdown > docs/steps.md";

TEST(StepsDocTest, DocsStepsMdIsWhatTheCatalogGenerates) {
  const fs::path source = GPUCTL_SOURCE_DIR;
  // The source tree's playbooks explicitly: neither $GPUCTL_PLAYBOOKS nor an
  // installed copy may stand in for the catalog the page documents.
  const std::string command =
      fmt::format("env -u GPUCTL_PLAYBOOKS '{}' --playbooks '{}' catalog --markdown </dev/null",
                  GPUCTL_BINARY, (source / "playbooks").string());
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr) << command;
  std::string generated;
  char buffer[4096];
  for (std::size_t n = 0; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    generated.append(buffer, n);
  }
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
  ASSERT_FALSE(generated.empty()) << command;

  std::ifstream in(source / "docs" / "steps.md", std::ios::binary);
  ASSERT_TRUE(in) << "docs/steps.md is missing. " << kRegenerate;
  std::ostringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == generated) << kRegenerate;
}

}  // namespace
}  // namespace gpuctl
