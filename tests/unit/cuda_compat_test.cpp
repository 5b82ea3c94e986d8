#include "gpuctl/model/cuda_compat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuctl {
namespace {

using ::testing::HasSubstr;

TEST(CudaCompat, TableIsOrderedAndComplete) {
  const auto versions = KnownCudaVersions();
  ASSERT_EQ(versions.size(), 19U);
  EXPECT_EQ(versions.front(), "11.0");
  EXPECT_EQ(versions.back(), "13.0");
  EXPECT_EQ(CudaReleases()[13].version, "12.4");
  EXPECT_EQ(CudaReleases()[13].min_driver, "550.54.14");
}

TEST(CudaCompat, BranchAtTheToolkitDriverIsFull) {
  EXPECT_EQ(CheckCudaDriver("12.4", "550").fit, CudaDriverFit::kFull);
  EXPECT_EQ(CheckCudaDriver("12.4", "560").fit, CudaDriverFit::kFull);
  EXPECT_EQ(CheckCudaDriver("11.0", "450").fit, CudaDriverFit::kFull);
  EXPECT_EQ(CheckCudaDriver("13.0", "580").fit, CudaDriverFit::kFull);
  EXPECT_TRUE(CheckCudaDriver("12.4", "550").message.empty());
}

TEST(CudaCompat, FullVersionsCompareEveryComponent) {
  EXPECT_EQ(CheckCudaDriver("12.4", "550.54.14").fit, CudaDriverFit::kFull);
  EXPECT_EQ(CheckCudaDriver("12.4", "550.54.13").fit, CudaDriverFit::kMinorVersionCompat);
  EXPECT_EQ(CheckCudaDriver("12.8", "570.26").fit, CudaDriverFit::kFull);
  // 450.51 is a 450 driver but older than 11.x's minor-version minimum.
  EXPECT_EQ(CheckCudaDriver("11.4", "450.51.05").fit, CudaDriverFit::kTooOld);
  EXPECT_EQ(CheckCudaDriver("11.4", "450.80.02").fit, CudaDriverFit::kMinorVersionCompat);
}

TEST(CudaCompat, OlderBranchOfTheSameMajorIsMinorVersionCompatWithWarning) {
  const auto check = CheckCudaDriver("12.4", "535");
  EXPECT_EQ(check.fit, CudaDriverFit::kMinorVersionCompat);
  EXPECT_THAT(check.message, HasSubstr("driver branch 535 runs CUDA 12.4 only through "
                                       "minor-version compatibility"));
  EXPECT_THAT(check.message, HasSubstr("550.54.14"));
  EXPECT_EQ(CheckCudaDriver("12.9", "525").fit, CudaDriverFit::kMinorVersionCompat);
  EXPECT_EQ(CheckCudaDriver("11.8", "450").fit, CudaDriverFit::kMinorVersionCompat);
}

TEST(CudaCompat, BranchBelowTheMajorMinimumIsTooOld) {
  const auto check = CheckCudaDriver("12.4", "470");
  EXPECT_EQ(check.fit, CudaDriverFit::kTooOld);
  EXPECT_EQ(check.message,
            "driver branch 470 cannot run CUDA 12.4: CUDA 12.x needs driver 525.60.13 or newer "
            "(550.54.14 for full support)");
  EXPECT_EQ(CheckCudaDriver("13.0", "575").fit, CudaDriverFit::kTooOld);
  EXPECT_EQ(CheckCudaDriver("11.0", "440").fit, CudaDriverFit::kTooOld);
}

TEST(CudaCompat, PatchReleaseIsJudgedAsItsMinor) {
  EXPECT_EQ(CheckCudaDriver("12.4.1", "550").fit, CudaDriverFit::kFull);
  EXPECT_EQ(CheckCudaDriver("12.4.1", "470").fit, CudaDriverFit::kTooOld);
}

TEST(CudaCompat, UnknownCudaListsKnownVersions) {
  const auto check = CheckCudaDriver("12.7", "550");
  EXPECT_EQ(check.fit, CudaDriverFit::kUnknownCuda);
  EXPECT_THAT(check.message, HasSubstr("unknown CUDA version '12.7'; known: 11.0, 11.1"));
  EXPECT_THAT(check.message, HasSubstr("12.6, 12.8"));
  EXPECT_EQ(CheckCudaDriver("10.2", "550").fit, CudaDriverFit::kUnknownCuda);
  EXPECT_EQ(CheckCudaDriver("twelve", "550").fit, CudaDriverFit::kUnknownCuda);
}

TEST(CudaCompat, BadDriverText) {
  EXPECT_FALSE(IsDriverVersion("r550"));
  EXPECT_FALSE(IsDriverVersion("550."));
  EXPECT_FALSE(IsDriverVersion(""));
  EXPECT_TRUE(IsDriverVersion("550"));
  EXPECT_TRUE(IsDriverVersion("550.54.14"));
  EXPECT_EQ(CheckCudaDriver("12.4", "latest").fit, CudaDriverFit::kBadDriver);
}

TEST(CudaCompat, MinorVersionMinimums) {
  EXPECT_EQ(MinorVersionCompatDriver(11), "450.80.02");
  EXPECT_EQ(MinorVersionCompatDriver(12), "525.60.13");
  EXPECT_EQ(MinorVersionCompatDriver(13), "580");
  EXPECT_FALSE(MinorVersionCompatDriver(10));
}

}  // namespace
}  // namespace gpuctl
