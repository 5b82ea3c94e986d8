// versions.driver: a branch ("550") or an exact release ("550.54.14"), read
// by kind with the value's own line:column on anything else, and handed to
// the steps as the branch and, for a release, the exact version.
#include <gtest/gtest.h>

#include "gpuctl/model/params.h"
#include "gpuctl/model/value_kinds.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::kMinimalInventory;
using testing::ParseText;

std::string WithVersions(const std::string& versions) {
  std::string text = kMinimalInventory;
  text.insert(text.find("nodes:"), "versions:\n" + versions);
  return text;
}

TEST(InventoryDriver, ABranchOrAnExactReleaseIsADriver) {
  for (const char* good : {"550", "535", "550.54.14", "570.86.15", "580.95.05", "1000"}) {
    EXPECT_EQ(DriverVersionProblem(good), "") << good;
  }
  for (const char* bad : {"", "r550", "550.54", "550.54.14.1", "550.", ".550", "550..14",
                          "550.54.14-1", "550.54.14-0ubuntu1", "550-server", "550 ", "latest",
                          "5500000", "550.54.x", "550;reboot"}) {
    EXPECT_NE(DriverVersionProblem(bad), "") << bad;
  }
}

TEST(InventoryDriver, BothSpellingsReadTheSameSetting) {
  for (const char* key : {"driver", "driver_branch"}) {
    auto p = ParseText(WithVersions(std::string("  ") + key + ": \"550.54.14\"\n"));
    ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
    EXPECT_EQ(p.inventory->versions.driver_branch, "550.54.14") << key;
    EXPECT_EQ(p.diagnostics.ErrorCount(), 0U) << p.diagnostics.Format();
  }
}

TEST(InventoryDriver, AnythingElseIsAnErrorAtTheValue) {
  // versions: is line 2, the driver line 3; the value starts at column 11
  // after "  driver: " (18 after "  driver_branch: ").
  struct Case {
    const char* line;
    int column;
    const char* message;
  };
  for (const Case& c : {
           Case{"  driver: \"550.54\"\n", 11,
                "invalid driver version '550.54': expected a branch like '550' or an exact "
                "version like '550.54.14'"},
           Case{"  driver: 550-server\n", 11, "invalid driver version '550-server'"},
           Case{"  driver: \"550.54.14-0ubuntu1\"\n", 11,
                "invalid driver version '550.54.14-0ubuntu1'"},
           Case{"  driver: \"550.54.14; reboot\"\n", 11, "invalid driver version"},
           Case{"  driver_branch: r550\n", 18, "invalid driver branch 'r550'"},
       }) {
    const auto p = ParseText(WithVersions(c.line));
    EXPECT_FALSE(p.inventory) << c.line;
    EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, c.column, c.message)) << c.line;
    // The one line: not also judged against the CUDA version.
    EXPECT_EQ(p.diagnostics.All().size(), 1U) << p.diagnostics.Format();
  }
}

TEST(InventoryDriver, OnlyOneOfTheTwoNames) {
  const auto p = ParseText(WithVersions("  driver_branch: \"550\"\n  driver: \"570\"\n"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 11,
                            "versions.driver and versions.driver_branch are one setting"));
}

TEST(InventoryDriver, StepsGetTheBranchAndTheExactRelease) {
  const auto exact = ParseText(WithVersions("  driver: \"550.54.14\"\n"));
  ASSERT_TRUE(exact.inventory) << exact.diagnostics.Format();
  const Inventory& inv = *exact.inventory;
  EXPECT_EQ(StepEnvironment({"driver_branch", "driver_version"}, inv, inv.nodes[1]),
            (std::map<std::string, std::string>{{"GPUCTL_DRIVER_BRANCH", "550"},
                                                {"GPUCTL_DRIVER_VERSION", "550.54.14"}}));

  // A branch alone keeps today's behaviour: no exact version.
  const auto branch = ParseText(WithVersions("  driver: \"570\"\n"));
  ASSERT_TRUE(branch.inventory) << branch.diagnostics.Format();
  EXPECT_EQ(StepEnvironment({"driver_branch", "driver_version"}, *branch.inventory,
                            branch.inventory->nodes[1]),
            (std::map<std::string, std::string>{{"GPUCTL_DRIVER_BRANCH", "570"},
                                                {"GPUCTL_DRIVER_VERSION", ""}}));
}

}  // namespace
}  // namespace gpuctl
