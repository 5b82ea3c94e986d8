// Folding: identical nodes said once under their names in bracket ranges.
#include "gpuctl/view/fold.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpuctl/view/node_names.h"

namespace gpuctl {
namespace {

TEST(Fold, TwentyIdenticalNodesAreOneGroupWithTheirLinesOnce) {
  NodeFolder folder;
  for (int i = 1; i <= 20; ++i) {
    const std::string node = fmt::format("worker{:02}", i);
    folder.Add(node, "chrony is not installed\nhostname is localhost, want " + node + "\n");
  }
  ASSERT_EQ(folder.groups().size(), 1U);
  const NodeGroup& group = folder.groups().front();
  EXPECT_EQ(group.Label(), "worker[01-20] (20 identical)");
  EXPECT_EQ(group.Shown(), "chrony is not installed\nhostname is localhost, want <node>\n");
}

TEST(Fold, ADifferingNodeStandsApartAndTheOthersStayOneGroup) {
  NodeFolder folder;
  for (int i = 1; i <= 18; ++i) {
    const std::string node = fmt::format("gpu{:02}", i);
    folder.Add(node, i == 7 ? "ok\n" : "chrony is not installed\n");
  }
  ASSERT_EQ(folder.groups().size(), 2U);
  // Groups in the order of their first node; the gap shows in the range.
  EXPECT_EQ(folder.groups()[0].Label(), "gpu[01-06,08-18] (17 identical)");
  EXPECT_EQ(folder.groups()[1].Label(), "gpu07");
  EXPECT_EQ(folder.groups()[1].Shown(), "ok\n");
}

TEST(Fold, ALoneNodeGetsItsOwnNameBack) {
  NodeFolder folder;
  folder.Add("master1", "hostname is localhost, want master1\n");
  folder.Add("gpu01", "hostname is localhost, want gpu01\n", "worker");
  // Same text once named <node>, but the key (roles) differs: apart.
  ASSERT_EQ(folder.groups().size(), 2U);
  EXPECT_EQ(folder.groups()[0].Shown(), "hostname is localhost, want master1\n");
  EXPECT_EQ(folder.groups()[1].Shown(), "hostname is localhost, want gpu01\n");
}

TEST(Fold, ANameInsideALongerWordIsNotTheNode) {
  // gpu1's own name, not the gpu10 it mentions.
  EXPECT_EQ(WithoutName("gpu1 waits for gpu10 (gpu1.lab)", "gpu1", "<node>"),
            "<node> waits for gpu10 (<node>.lab)");
  NodeFolder folder;
  folder.Add("gpu1", "reaches gpu10\n");
  folder.Add("gpu2", "reaches gpu10\n");
  ASSERT_EQ(folder.groups().size(), 1U);
  EXPECT_EQ(folder.groups()[0].Label(), "gpu[1-2] (2 identical)");
}

TEST(Fold, NamesFoldIntoBracketRanges) {
  std::vector<std::string> names;
  for (int i = 1; i <= 18; ++i) {
    names.push_back(fmt::format("gpu{:02}", i));
  }
  EXPECT_EQ(CompressNodeNames(names), "gpu[01-18]");
  EXPECT_EQ(CompressNodeNames({"gpu01", "gpu02", "gpu03", "gpu05"}), "gpu[01-03,05]");
  EXPECT_EQ(CompressNodeNames({"login", "storage"}), "login,storage");
}

}  // namespace
}  // namespace gpuctl
