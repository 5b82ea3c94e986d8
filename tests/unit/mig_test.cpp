// mig.h: the GI profiles per model, and the placement search that decides
// whether a layout fits one GPU.
#include "gpuctl/model/mig.h"

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

std::vector<std::string> NamesOf(const std::vector<MigProfile>& profiles) {
  std::vector<std::string> out;
  for (const auto& p : profiles) out.push_back(p.name);
  return out;
}

TEST(MigProfiles, NamesFollowTheModelsMemory) {
  EXPECT_EQ(NamesOf(MigProfiles("NVIDIA A100-SXM4-80GB")),
            (std::vector<std::string>{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb",
                                      "4g.40gb", "7g.80gb"}));
  EXPECT_EQ(NamesOf(MigProfiles("NVIDIA A100-SXM4-40GB")).front(), "1g.5gb");
  EXPECT_EQ(NamesOf(MigProfiles("NVIDIA H100 80GB HBM3")).back(), "7g.80gb");
  EXPECT_EQ(NamesOf(MigProfiles("NVIDIA H100 NVL")).back(), "7g.94gb");
  EXPECT_EQ(NamesOf(MigProfiles("NVIDIA H200")).back(), "7g.141gb");
  EXPECT_EQ(NamesOf(MigProfiles("NVIDIA B200")).front(), "1g.23gb");
  EXPECT_TRUE(MigProfiles("NVIDIA L40S").empty());
  // The ids nvidia-smi mig -lgip prints on an A100/H100.
  const auto h100 = MigProfiles("NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100[0].id, 19);
  EXPECT_EQ(h100[4].id, 9);
  EXPECT_EQ(h100[6].id, 0);
}

TEST(PlaceMig, FindsThePlacementAFirstFitWouldMiss) {
  const auto profiles = MigProfiles("NVIDIA A100-SXM4-80GB");
  std::string why;
  // First fit puts the 3g at slice 0, leaving slice 7 to a 1g, which may
  // not start there; the only fit has the 3g at slice 4.
  auto placed = PlaceMig(profiles, {"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"}, why);
  ASSERT_TRUE(placed) << why;
  ASSERT_EQ(placed->size(), 4U);
  EXPECT_EQ((*placed)[0].profile, "3g.40gb");
  EXPECT_EQ((*placed)[0].start, 4);
  EXPECT_EQ((*placed)[1].profile, "2g.20gb");
  EXPECT_EQ((*placed)[1].start, 0);
  EXPECT_EQ((*placed)[2].start, 2);
  EXPECT_EQ((*placed)[3].start, 3);
}

TEST(PlaceMig, SevenSmallestAndTheWholeGpuFit) {
  const auto profiles = MigProfiles("NVIDIA H100 80GB HBM3");
  std::string why;
  auto seven = PlaceMig(profiles, std::vector<std::string>(7, "1g.10gb"), why);
  ASSERT_TRUE(seven) << why;
  EXPECT_EQ(seven->back().start, 6);
  auto whole = PlaceMig(profiles, {"7g.80gb"}, why);
  ASSERT_TRUE(whole) << why;
  auto empty = PlaceMig(profiles, {}, why);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  auto halves = PlaceMig(profiles, {"4g.40gb", "3g.40gb"}, why);
  ASSERT_TRUE(halves) << why;
}

TEST(PlaceMig, SaysWhyALayoutDoesNotFit) {
  const auto profiles = MigProfiles("NVIDIA H100 80GB HBM3");
  std::string why;
  EXPECT_FALSE(PlaceMig(profiles, std::vector<std::string>(8, "1g.10gb"), why));
  EXPECT_EQ(why, "a GPU holds at most 7 1g.10gb");
  EXPECT_FALSE(PlaceMig(profiles, {"4g.40gb", "2g.20gb", "2g.20gb"}, why));
  EXPECT_EQ(why, "they take 8 compute slices of the GPU's 7");
  EXPECT_FALSE(PlaceMig(profiles, {"3g.40gb", "3g.40gb", "1g.10gb"}, why));
  EXPECT_EQ(why, "they take 9 memory slices of the GPU's 8");
  // 1g.20gb starts only at even slices: three and two 1g.10gb fit only
  // with a gap the 1g.10gb fill (0, 2, 6 and then 4, 5).
  EXPECT_TRUE(PlaceMig(profiles, {"1g.20gb", "1g.20gb", "1g.20gb", "1g.10gb", "1g.10gb"}, why));
  EXPECT_FALSE(PlaceMig(profiles, {"1g.5gb"}, why));
  EXPECT_EQ(why, "no MIG profile '1g.5gb' on this model");
}

}  // namespace
}  // namespace gpuctl
