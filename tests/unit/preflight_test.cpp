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

// The running kernel's headers (for the driver's DKMS build at install): a
// node without them is refused when its sources offer none, and needs only a
// change when they do or when it has them. The kernel is one this machine
// has no /lib/modules for.
constexpr const char* kKernel = "5.15.0-200-generic";

// The refusal for a kernel without headers, `package` being their package
// and `what` the modules DKMS would build.
std::string NoHeaders(const std::string& kernel, const std::string& package,
                      const std::string& what) {
  return "the running kernel " + kernel +
         " has no headers and the node's repositories offer none (" + package +
         "): DKMS cannot build " + what +
         " for it; add a repository that has them, or boot a kernel they have headers for\n";
}

void FreshNodeOfKernel(StepHarness& h, const std::string& headers_madison) {
  h.SetEnv("GPUCTL_FACT_KERNEL", kKernel);
  h.Stub("dpkg-query", "exit 1");
  h.StubOutput("policy-text", kPolicyRead);
  h.StubOutput("headers-madison", headers_madison);
  h.Stub("apt-cache", "case \"$1 $2\" in\n  'madison nvidia-driver-550') cat '" +
                          StepHarness::Fixture("apt/apt-cache-madison-nvidia-driver-550.txt") +
                          "' ;;\n  'madison linux-headers-'*) headers-madison ;;\n"
                          "  policy*) policy-text ;;\nesac");
}

TEST(PreflightTest, ARunningKernelWithoutHeadersTheSourcesLackIsRefused) {
  StepHarness h(PreflightInventory("550"));
  FreshNodeOfKernel(h, "");
  const auto run = h.Probe("gpu.driver", "u");
  EXPECT_EQ(run.status, 5);
  EXPECT_EQ(run.out,
            "the running kernel 5.15.0-200-generic has no headers and the node's repositories "
            "offer none (linux-headers-5.15.0-200-generic): DKMS cannot build the NVIDIA module "
            "for it; add a repository that has them, or boot a kernel they have headers for\n");
}

TEST(PreflightTest, HeadersTheSourcesOfferOrTheNodeHasNeedOnlyTheChange) {
  StepHarness offered(PreflightInventory("550"));
  FreshNodeOfKernel(offered,
                    " linux-headers-5.15.0-200-generic | 5.15.0-200.210 | "
                    "http://archive.ubuntu.com/ubuntu jammy-updates/main amd64 Packages\n");
  auto run = offered.Probe("gpu.driver", "u");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.out, "nvidia-driver-550 is not installed\n");

  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness installed(PreflightInventory("550"));
  FreshNodeOfKernel(installed, "");
  installed.File(std::string("/lib/modules/") + kKernel + "/build/include/generated/utsrelease.h",
                 "#define UTS_RELEASE \"5.15.0-200-generic\"\n");
  run = installed.Probe("gpu.driver", "u");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.out, "nvidia-driver-550 is not installed\n");
}

TEST(PreflightTest, OnDnfTheKernelDevelOfTheRunningReleaseIsAsked) {
  const std::string inventory =
      "cluster: t\nversions: {driver: \"550\", cuda: \"12.4\"}\nnodes:\n"
      "  - {name: m, address: 198.18.0.1, os: rocky-9, roles: [master]}\n"
      "  - name: r\n    address: 198.18.0.2\n    os: rocky-9\n    roles: [worker]\n"
      "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 1}}\n";
  for (const bool offered : {false, true}) {
    SCOPED_TRACE(offered ? "offered" : "not offered");
    StepHarness h(inventory);
    h.SetEnv("GPUCTL_FACT_KERNEL", "5.14.0-427.13.1.el9_4.x86_64");
    h.Stub("rpm", "exit 1");
    // The driver's own preflight cannot read repository cuda here (no
    // batch scratch); dnf's metadata answers for the headers:
    // kernel-devel-K, EL's name, version, release and arch of them.
    h.Stub("dnf", std::string("case \"$*\" in\n") +
                      "  *'-C '*' -- kernel-devel-5.14.0-427.13.1.el9_4.x86_64') " +
                      (offered ? "echo 5.14.0-427.13.1.el9_4" : ":") + " ;;\n  *) exit 1 ;;\nesac");
    const auto run = h.Probe("gpu.driver", "r");
    if (offered) {
      EXPECT_EQ(run.status, 1) << run.out;
      EXPECT_EQ(run.out.find("refused"), std::string::npos) << run.out;
    } else {
      EXPECT_EQ(run.status, 5) << run.out;
      EXPECT_EQ(run.out,
                NoHeaders("5.14.0-427.13.1.el9_4.x86_64",
                          "kernel-devel-5.14.0-427.13.1.el9_4.x86_64", "the NVIDIA module"));
    }
  }
}

// MLNX OFED's repository is one per release (latest-24.01/...): a release
// the mirror does not have is a path its server answers 404 for. That is an
// answer, and ib.ofed refuses; a server that does not answer refuses nothing.
std::string OfedInventory(const std::string& ofed) {
  return "cluster: t\nversions: {ofed: \"" + ofed +
         "\"}\nnodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: u\n    address: 198.18.0.2\n    os: ubuntu-22.04\n    roles: [worker]\n"
         "    hardware: {ib: [{device: mlx5_0, port: 1}]}\n"
         "  - name: r\n    address: 198.18.0.3\n    os: rocky-9\n    roles: [worker]\n"
         "    hardware: {ib: [{device: mlx5_0, port: 1}]}\n";
}

// A fresh node in a batch (its scratch directory): the key cannot be had
// (gpg fails), so the repository is not read; curl answers the index's URL
// with `status`. Its apt sources offer the running kernel's headers
// (`headers-madison`, which a test may make say otherwise).
void FreshOfedNode(StepHarness& h, const std::string& status) {
  h.Stub("dpkg-query", "exit 1");
  h.Stub("rpm", "exit 1");
  h.Stub("gpg", "exit 2");
  h.Stub("curl", "for a; do last=$a; done\necho \"$last\" >>\"$HOME/asked\"\nprintf " + status);
  h.SetEnv("GPUCTL_FACT_KERNEL", kKernel);
  h.StubOutput("policy-text", kPolicyRead);
  h.StubOutput("headers-madison",
               " linux-headers-5.15.0-200-generic | 5.15.0-200.210 | "
               "http://archive.ubuntu.com/ubuntu jammy-updates/main amd64 Packages\n");
  h.Stub("apt-cache",
         "case \"$1 $2\" in\n  'madison linux-headers-'*) headers-madison ;;\n"
         "  policy*) policy-text ;;\nesac");
}

TEST(PreflightTest, AnOfedReleaseTheMirrorHasNoRepositoryForIsRefused) {
  StepHarness h(OfedInventory("23.99"));
  FreshOfedNode(h, "404");
  for (const auto& [node, index] :
       {std::pair{"u",
                  "https://linux.mellanox.com/public/repo/mlnx_ofed/latest-23.99/ubuntu22.04/"
                  "amd64/Release"},
        std::pair{"r",
                  "https://linux.mellanox.com/public/repo/mlnx_ofed/latest-23.99/rhel9.4/"
                  "x86_64/repodata/repomd.xml"}}) {
    SCOPED_TRACE(node);
    const auto run = h.Script("_gf_tmp=$(mktemp -d)\nGPUCTL_FACT_OS_VERSION_ID=9.4\n(\n" +
                                  h.ProbeScript("ib.ofed") + "\n)",
                              "ib.ofed", node);
    EXPECT_EQ(run.status, 5) << run.out;
    EXPECT_EQ(run.out, std::string("repository ofed has no index at ") + index +
                           " (the server answers 404 Not Found); set versions.ofed to a release "
                           "the mirror has\n");
  }
}

TEST(PreflightTest, AnOfedMirrorThatDoesNotAnswerRefusesNothing) {
  StepHarness h(OfedInventory("23.99"));
  FreshOfedNode(h, "000");  // curl's code when nothing answered
  const auto run =
      h.Script("_gf_tmp=$(mktemp -d)\n(\n" + h.ProbeScript("ib.ofed") + "\n)", "ib.ofed", "u");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.out, "mlnx-ofed-all is not installed\n");
}

// Ubuntu's MLNX OFED builds its kernel modules with DKMS at install, so an
// apt node needs the running kernel's headers, as for the driver.
TEST(PreflightTest, OfedOnAptNeedsTheRunningKernelsHeadersForItsDkmsModules) {
  for (const bool offered : {false, true}) {
    SCOPED_TRACE(offered ? "offered" : "not offered");
    StepHarness h(OfedInventory("24.01"));
    FreshOfedNode(h, "200");  // the release's repository is there
    if (!offered) {
      h.StubOutput("headers-madison", "");
    }
    const auto run =
        h.Script("_gf_tmp=$(mktemp -d)\n(\n" + h.ProbeScript("ib.ofed") + "\n)", "ib.ofed", "u");
    EXPECT_EQ(run.status, offered ? 1 : 5) << run.out;
    EXPECT_EQ(run.out, offered ? "mlnx-ofed-all is not installed\n"
                               : NoHeaders(kKernel, std::string("linux-headers-") + kKernel,
                                           "MLNX OFED's kernel modules (mlnx-ofed-kernel-dkms)"));
  }
}

}  // namespace
}  // namespace gpuctl
