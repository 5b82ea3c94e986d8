#include "gpuctl/model/syntax.h"

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

TEST(Syntax, Addresses) {
  EXPECT_TRUE(IsAddress("198.18.0.10"));
  EXPECT_TRUE(IsAddress("fd00::10"));
  EXPECT_TRUE(IsAddress("gpu-01.lab.example"));
  EXPECT_TRUE(IsAddress("localhost"));
  EXPECT_FALSE(IsAddress("10.0.0.300"));
  EXPECT_FALSE(IsAddress("10.0.0"));
  EXPECT_FALSE(IsAddress("-bad.example"));
  EXPECT_FALSE(IsAddress("under_score"));
  EXPECT_FALSE(IsAddress("two..dots"));
  EXPECT_FALSE(IsAddress(""));
  EXPECT_FALSE(IsAddress("198.18.0.10:22"));
}

TEST(Syntax, Cidr) {
  EXPECT_TRUE(IsCidr("10.244.0.0/16"));
  EXPECT_TRUE(IsCidr("0.0.0.0/0"));
  EXPECT_TRUE(IsCidr("fd00::/64"));
  EXPECT_FALSE(IsCidr("10.244.0.0"));
  EXPECT_FALSE(IsCidr("10.244.0.0/33"));
  EXPECT_FALSE(IsCidr("10.244.0.0/"));
  EXPECT_FALSE(IsCidr("10.244.0.0/-1"));
  EXPECT_FALSE(IsCidr("10.244.0.0/+8"));
  EXPECT_FALSE(IsCidr("fd00::/129"));
  EXPECT_FALSE(IsCidr("host/24"));
}

TEST(Syntax, Slash24) {
  EXPECT_EQ(Ipv4Slash24("198.18.0.10"), "198.18.0.0/24");
  EXPECT_FALSE(Ipv4Slash24("master.lab"));
  EXPECT_FALSE(Ipv4Slash24("fd00::1"));
}

TEST(Syntax, JumpHost) {
  EXPECT_TRUE(IsJumpHost("bastion.lab"));
  EXPECT_TRUE(IsJumpHost("admin@bastion.lab:2222"));
  EXPECT_TRUE(IsJumpHost("10.0.0.1:22"));
  EXPECT_TRUE(IsJumpHost("[fd00::1]:22"));
  EXPECT_TRUE(IsJumpHost("fd00::1"));
  EXPECT_FALSE(IsJumpHost("bastion:0"));
  EXPECT_FALSE(IsJumpHost("bastion:99999"));
  EXPECT_FALSE(IsJumpHost("bastion:"));
  EXPECT_FALSE(IsJumpHost("[fd00::1]x"));
  EXPECT_FALSE(IsJumpHost("user@"));
}

TEST(Syntax, EnvVarName) {
  EXPECT_TRUE(IsEnvVarName("GPUCTL_SUDO_PASSWORD"));
  EXPECT_TRUE(IsEnvVarName("_x1"));
  EXPECT_FALSE(IsEnvVarName("1X"));
  EXPECT_FALSE(IsEnvVarName("hunter2 with spaces"));
  EXPECT_FALSE(IsEnvVarName(""));
}

}  // namespace
}  // namespace gpuctl
