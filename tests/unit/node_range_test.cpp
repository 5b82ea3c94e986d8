// Node ranges (gpu[01-16]) and --limit/--exclude matching.
#include "gpuctl/model/node_range.h"

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

using Names = std::vector<std::string>;

Names Expand(const std::string& pattern) {
  std::string error;
  auto names = ExpandRange(pattern, error);
  EXPECT_TRUE(names.has_value()) << pattern << ": " << error;
  return names.value_or(Names{});
}

std::string ExpandError(const std::string& pattern) {
  std::string error;
  EXPECT_FALSE(ExpandRange(pattern, error).has_value()) << pattern;
  return error;
}

TEST(NodeRange, KeepsTheLowerBoundsZeroPadding) {
  EXPECT_EQ(Expand("gpu[01-03]"), (Names{"gpu01", "gpu02", "gpu03"}));
  EXPECT_EQ(Expand("gpu[8-11]"), (Names{"gpu8", "gpu9", "gpu10", "gpu11"}));
  EXPECT_EQ(Expand("gpu[008-010]").front(), "gpu008");
  EXPECT_EQ(Expand("gpu[01-16]").size(), 16U);
  EXPECT_EQ(Expand("gpu[01-16]").back(), "gpu16");
}

TEST(NodeRange, ListsAndSeveralGroupsAndPlainNames) {
  EXPECT_EQ(Expand("gpu[1-3,7]"), (Names{"gpu1", "gpu2", "gpu3", "gpu7"}));
  EXPECT_EQ(Expand("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(Expand("10.0.1.[11-13]"), (Names{"10.0.1.11", "10.0.1.12", "10.0.1.13"}));
  EXPECT_EQ(Expand("worker1"), (Names{"worker1"}));
  EXPECT_EQ(Expand("gpu[5]-ib"), (Names{"gpu5-ib"}));
}

TEST(NodeRange, MalformedPatternsAreRefused) {
  EXPECT_NE(ExpandError("gpu[01-16").find("without ']'"), std::string::npos);
  EXPECT_NE(ExpandError("gpu01-16]").find("without '['"), std::string::npos);
  EXPECT_NE(ExpandError("gpu[16-01]").find("ends before it starts"), std::string::npos);
  EXPECT_NE(ExpandError("gpu[a-c]").find("expected numbers"), std::string::npos);
  EXPECT_NE(ExpandError("gpu[]").find("expected numbers"), std::string::npos);
  EXPECT_NE(ExpandError("gpu[1-999999999]").find("more than"), std::string::npos);
  EXPECT_NE(ExpandError("a[1-1000]b[1-1000]").find("more than"), std::string::npos);
}

TEST(NodeRange, SplitsAtCommasOutsideBrackets) {
  EXPECT_EQ(SplitPatterns("worker1,gpu[1-3,7],w2"), (Names{"worker1", "gpu[1-3,7]", "w2"}));
  EXPECT_EQ(SplitPatterns("a,,b,"), (Names{"a", "b"}));
  EXPECT_TRUE(IsRange("gpu[1-2]"));
  EXPECT_FALSE(IsRange("gpu1"));
}

class SelectNodesTest : public ::testing::Test {
 protected:
  Names nodes = {"master1", "worker1", "worker07", "worker08", "worker09", "worker10"};

  std::set<std::string> Select(const Names& limit, const Names& exclude) {
    std::string error;
    auto selected = SelectNodes(nodes, limit, exclude, error);
    EXPECT_TRUE(selected.has_value()) << error;
    return selected.value_or(std::set<std::string>{});
  }
  std::string SelectError(const Names& limit, const Names& exclude) {
    std::string error;
    EXPECT_FALSE(SelectNodes(nodes, limit, exclude, error).has_value());
    return error;
  }
};

TEST_F(SelectNodesTest, LimitTakesNamesAndRanges) {
  EXPECT_EQ(Select({"worker1,worker[07-09]"}, {}),
            (std::set<std::string>{"worker1", "worker07", "worker08", "worker09"}));
  EXPECT_EQ(Select({"worker1", "master1"}, {}), (std::set<std::string>{"master1", "worker1"}));
}

TEST_F(SelectNodesTest, ExcludeRemovesFromTheLimitOrFromEveryNode) {
  EXPECT_EQ(Select({}, {"worker[07-10]"}), (std::set<std::string>{"master1", "worker1"}));
  EXPECT_EQ(Select({"worker[07-09]"}, {"worker08"}),
            (std::set<std::string>{"worker07", "worker09"}));
}

TEST_F(SelectNodesTest, ARangeNeedsOnlySomeOfItsNamesToExist) {
  // worker[07-12]: 11 and 12 are not nodes, 07..10 are.
  EXPECT_EQ(Select({"worker[07-12]"}, {}).size(), 4U);
}

TEST_F(SelectNodesTest, AnUnknownNameIsAnErrorWithDidYouMean) {
  const std::string error = SelectError({"workr1"}, {});
  EXPECT_NE(error.find("--limit workr1: no such node"), std::string::npos) << error;
  EXPECT_NE(error.find("worker1"), std::string::npos) << error;
  EXPECT_NE(SelectError({}, {"mastr1"}).find("--exclude mastr1"), std::string::npos);
}

TEST_F(SelectNodesTest, ARangeMatchingNothingOrAnEmptySelectionIsAnError) {
  EXPECT_NE(SelectError({"gpu[01-04]"}, {}).find("none of its 4 names"), std::string::npos);
  EXPECT_NE(SelectError({"worker1"}, {"worker1"}).find("leave no node"), std::string::npos);
  EXPECT_NE(SelectError({"gpu[01-"}, {}).find("without ']'"), std::string::npos);
}

}  // namespace
}  // namespace gpuctl
