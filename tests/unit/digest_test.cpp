#include "gpuctl/util/digest.h"

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

TEST(Digest, MatchesFnv1a64ReferenceValues) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(Digest(""), "cbf29ce484222325");
  EXPECT_EQ(Digest("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(Digest("foobar"), "85944171f73967e8");
}

TEST(Digest, IsSixteenHexDigitsAndSensitiveToEveryByte) {
  const std::string d = Digest("apt-get install -y nvidia-driver-550");
  EXPECT_EQ(d.size(), 16U);
  EXPECT_EQ(d.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(d, Digest("apt-get install -y nvidia-driver-535"));
  EXPECT_EQ(d, Digest("apt-get install -y nvidia-driver-550"));
}

}  // namespace
}  // namespace gpuctl
