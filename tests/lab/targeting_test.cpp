// --limit on a real lab: plan limited to a worker reads the master (whose
// k8s.init the worker's join waits for) and refuses, naming the master and
// the step, since a fresh master has not run it; a mistyped node name is
// refused before any node is contacted. Only k8s.join and what it needs,
// and plan only: short.
#include <gtest/gtest.h>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::Result;

class TargetingLabTest : public test::LabCase {
 protected:
  std::string Prefix() const override { return "tg"; }
  std::string Only() const override { return "k8s.join"; }
};

TEST_F(TargetingLabTest, PlanLimitedToAWorkerReadsTheMasterAndRefusesToChangeIt) {
  const Result typo = Gpuctl("plan --limit wrker1");
  EXPECT_EQ(typo.status, 1) << typo.out;
  EXPECT_NE(typo.out.find("--limit wrker1: no such node"), std::string::npos) << typo.out;
  EXPECT_NE(typo.out.find("worker1"), std::string::npos) << typo.out;
  EXPECT_NE(typo.out.find("nothing was sent to any node"), std::string::npos) << typo.out;

  const Result limited = Gpuctl("plan --limit worker1");
  EXPECT_EQ(limited.status, 1) << limited.out;
  EXPECT_NE(limited.out.find("limited to 1 of"), std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find("outside --limit"), std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find("k8s.init"), std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find("master1"), std::string::npos) << limited.out;
}

}  // namespace
}  // namespace gpuctl
