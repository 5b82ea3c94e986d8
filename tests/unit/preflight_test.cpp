// The preflight (docs/playbooks.md#preflight): a probe about to say "needs
// change" asks what the node's repositories offer and exits 5 when the
// change cannot succeed. apt-cache's output is the real madison and policy
// formats (tests/fixtures/apt/); a node that never read its lists, or a
// repository that cannot be read, is never refused on a guess.
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

std::string PreflightInventory(const std::string& driver) {
  return "cluster: t\nversions: {driver: \"" + driver +
         "\", cuda: \"12.4\"}\nnodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: u\n    address: 198.18.0.2\n    os: ubuntu-22.04\n    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 1}}\n";
}

// apt-cache policy of a node whose lists were read, and of one whose never
// were (only dpkg's status), as apt 2.4 prints them.
constexpr const char* kPolicyRead =
    "Package files:\n 100 /var/lib/dpkg/status\n     release a=now\n"
    " 500 http://archive.ubuntu.com/ubuntu jammy-updates/restricted amd64 Packages\n"
    "     release v=22.04,o=Ubuntu,a=jammy-updates,n=jammy,l=Ubuntu,c=restricted,b=amd64\n"
    "     origin archive.ubuntu.com\nPinned packages:\n";
constexpr const char* kPolicyNeverRead =
    "Package files:\n 100 /var/lib/dpkg/status\n     release a=now\nPinned packages:\n";

// A GPU worker without the driver package; apt-cache answers madison from
// `madison` (a fixture path, or empty for no candidate) and policy with
// `policy`.
void FreshNode(StepHarness& h, const std::string& madison, const std::string& policy) {
  h.Stub("dpkg-query", "exit 1");
  h.StubOutput("policy-text", policy);
  h.Stub("apt-cache", "case \"$1\" in\n  madison) " +
                          (madison.empty() ? std::string(":") : "cat '" + madison + "'") +
                          " ;;\n  policy) policy-text ;;\nesac");
}

TEST(PreflightTest, ARefusedDriverReleaseNamesWhatTheArchiveHasAndTheFix) {
  StepHarness h(PreflightInventory("550.40.07"));
  FreshNode(h, StepHarness::Fixture("apt/apt-cache-madison-nvidia-driver-550.txt"), kPolicyRead);
  const auto run = h.Probe("gpu.driver", "u");
  EXPECT_EQ(run.status, 5);
  EXPECT_EQ(run.out,
            "the node's apt sources offer no nvidia-driver-550 550.40.07 (they have "
            "550.127.05-0ubuntu1, 550.54.15-0ubuntu1, 550.54.14-0ubuntu0.22.04.1); set "
            "versions.driver to a release they have, or to \"550\" for the branch's newest\n");
}

TEST(PreflightTest, AReleaseOrABranchTheArchiveHasNeedsAChangeOnly) {
  for (const char* driver : {"550.54.15", "550"}) {
    SCOPED_TRACE(driver);
    StepHarness h(PreflightInventory(driver));
    FreshNode(h, StepHarness::Fixture("apt/apt-cache-madison-nvidia-driver-550.txt"), kPolicyRead);
    const auto run = h.Probe("gpu.driver", "u");
    EXPECT_EQ(run.status, 1) << run.out;
    EXPECT_EQ(run.out, "nvidia-driver-550 is not installed\n");
  }
}

TEST(PreflightTest, ABranchMissingFromListsThatWereReadIsRefused) {
  StepHarness h(PreflightInventory("570"));
  FreshNode(h, "", kPolicyRead);
  const auto run = h.Probe("gpu.driver", "u");
  EXPECT_EQ(run.status, 5);
  EXPECT_EQ(run.out,
            "the node's apt sources offer no nvidia-driver-570 (no nvidia-driver-570 at all); "
            "set versions.driver to a branch they have\n");
}

TEST(PreflightTest, ANodeThatNeverReadItsListsIsNotRefusedOnAGuess) {
  StepHarness h(PreflightInventory("570"));
  FreshNode(h, "", kPolicyNeverRead);
  const auto run = h.Probe("gpu.driver", "u");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.out, "nvidia-driver-570 is not installed\n");
}

TEST(PreflightTest, ARepositoryThatCannotBeReadRefusesNothing) {
  // repos.cuda not set up on the node and no batch scratch to read it into
  // (a probe run alone): the preflight cannot tell, so the probe goes on.
  StepHarness h(PreflightInventory("550"));
  h.Stub("dpkg-query", "exit 1");
  const auto run = h.Probe("cuda.toolkit", "u");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.out, "cuda-toolkit-12-4 is not installed\n");
}

TEST(PreflightTest, TheRefusalShowsTheNewestThreeAndTheRepositorysName) {
  StepHarness h(PreflightInventory("550"));
  const auto run = h.Script(
      "_po='12.6.3-1\n12.6.2-1\n12.4.1-1\n12.4.0-1'\n"
      "offer_refuse \"$GPUCTL_REPO_CUDA\" cuda-toolkit-12-5 '' 'set versions.cuda to a CUDA it "
      "has'",
      "cuda.toolkit", "u");
  EXPECT_EQ(run.status, 5);
  EXPECT_EQ(run.out,
            "repository cuda offers no cuda-toolkit-12-5 (it has 12.6.3-1, 12.6.2-1, 12.4.1-1, "
            "...); set versions.cuda to a CUDA it has\n");
}

}  // namespace
}  // namespace gpuctl
