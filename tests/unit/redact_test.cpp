#include "gpuctl/run/redact.h"

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

TEST(Redactor, ReplacesEveryOccurrence) {
  Redactor r;
  r.Add("abcdef.0123456789abcdef");
  EXPECT_EQ(r.Apply("kubeadm join --token abcdef.0123456789abcdef x abcdef.0123456789abcdef"),
            "kubeadm join --token <redacted> x <redacted>");
}

TEST(Redactor, LongerSecretWinsOverOneItContains) {
  Redactor r;
  r.Add("secret");
  r.Add("secret-and-more");
  EXPECT_EQ(r.Apply("[secret-and-more] [secret]"), "[<redacted>] [<redacted>]");
}

TEST(Redactor, IgnoresTinyValuesThatWouldGarbleOutput) {
  Redactor r;
  r.Add("1");
  r.Add("");
  EXPECT_EQ(r.Apply("1 of 1"), "1 of 1");
}

TEST(Redactor, HandlesAMaskThatContainsTheSecret) {
  Redactor r;
  r.Add("dact");
  EXPECT_EQ(r.Apply("dact dact"), "<redacted> <redacted>");
}

}  // namespace
}  // namespace gpuctl
