// Every shipped step has its probe tested against real tool output or node
// files: some tests/unit/steps_*_test.cpp names it. A step added to
// playbooks/ without such a test fails here.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

TEST(StepsCoverage, EveryShippedStepHasAProbeTest) {
  std::string tests;
  for (const auto& entry : fs::directory_iterator(fs::path(GPUCTL_SOURCE_DIR) / "tests/unit")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("steps_", 0) == 0 && name.size() > 9 &&
        name.compare(name.size() - 9, 9, "_test.cpp") == 0) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      tests += text.str();
    }
  }
  Diagnostics diagnostics;
  const auto catalog = Catalog::Load(GPUCTL_PLAYBOOK_DIR, diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  for (const Step& step : catalog->steps()) {
    EXPECT_NE(tests.find('"' + step.id + '"'), std::string::npos)
        << step.id << " (" << step.file << ") has no probe test in tests/unit/steps_*_test.cpp";
  }
}

}  // namespace
}  // namespace gpuctl
