// Node names folded into bracket ranges, and a node's own name taken out of
// its lines so identical nodes compare equal.
#include "gpuctl/view/node_names.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace gpuctl {
namespace {

std::vector<std::string> Numbered(const std::string& prefix, int from, int to, int width) {
  std::vector<std::string> names;
  for (int i = from; i <= to; ++i) {
    names.push_back(prefix + fmt::format("{:0{}}", i, width));
  }
  return names;
}

TEST(NodeNames, ARunOfNumberedNamesIsOneRange) {
  EXPECT_EQ(CompressNodeNames(Numbered("gpu", 1, 18, 2)), "gpu[01-18]");
  EXPECT_EQ(CompressNodeNames(Numbered("worker", 7, 9, 1)), "worker[7-9]");
}

TEST(NodeNames, GapsAndOtherNamesStayVisible) {
  EXPECT_EQ(CompressNodeNames({"gpu01", "gpu02", "gpu03", "gpu05"}), "gpu[01-03,05]");
  EXPECT_EQ(CompressNodeNames({"login", "gpu01", "gpu02"}), "login,gpu[01-02]");
  EXPECT_EQ(CompressNodeNames({"gpu1"}), "gpu1");
  // Another width is another group: gpu1 and gpu01 are different names.
  EXPECT_EQ(CompressNodeNames({"gpu1", "gpu2", "gpu01"}), "gpu[1-2],gpu01");
  // Unpadded numbers of any length are one run; padded ones keep their width.
  EXPECT_EQ(CompressNodeNames(Numbered("worker", 1, 19, 1)), "worker[1-19]");
  EXPECT_EQ(CompressNodeNames(Numbered("gpu", 1, 10, 2)), "gpu[01-10]");
  EXPECT_EQ(CompressNodeNames(Numbered("gpu", 0, 3, 1)), "gpu[0-3]");
  EXPECT_EQ(CompressNodeNames({"a", "b"}), "a,b");
  EXPECT_EQ(CompressNodeNames({}), "");
}

TEST(NodeNames, ANodesOwnNameIsTakenOutOfItsLines) {
  EXPECT_EQ(WithoutName("hostname is localhost, want gpu07 (gpu07)", "gpu07", "<node>"),
            "hostname is localhost, want <node> (<node>)");
  EXPECT_EQ(WithoutName("nothing here", "gpu07", "<node>"), "nothing here");
  EXPECT_EQ(WithoutName("x", "", "<node>"), "x");
}

}  // namespace
}  // namespace gpuctl
