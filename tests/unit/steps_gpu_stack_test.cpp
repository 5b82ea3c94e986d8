// The GPU stack steps' probes (playbooks/25-gpu-stack.yaml) read dpkg, apt-mark
// and rpm as they answer on a node: which driver packages are installed and
// held (tests/fixtures/apt/), and which cuDNN and NCCL versions are installed.
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

std::string GpuStackInventory(const std::string& os, const std::string& versions) {
  return "cluster: t\nversions: {" + versions +
         "}\nnodes:\n"
         "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: w\n    address: 198.18.0.2\n    os: " +
         os + "\n    roles: [worker]\n    hardware: {gpus: {model: H100, count: 8}}\n";
}

// dpkg-query as pkg_version asks it: -W -f=${Version} NAME, one version per
// installed package named in `versions` ("name=version" lines), else exit 1.
std::string DpkgVersions(const std::string& versions) {
  return "for a; do name=$a; done\n"
         "v=$(printf '%s\\n' '" +
         versions +
         "' | sed -n \"s/^$name=//p\")\n"
         "[ -n \"$v\" ] || exit 1\nprintf '%s' \"$v\"";
}

// rpm as pkg_version asks it: -q --quiet NAME (silent), then -q --qf ... NAME
// (which says "package NAME is not installed" on stdout when it is not).
std::string RpmVersions(const std::string& versions) {
  return "for a; do name=$a; done\n"
         "v=$(printf '%s\\n' '" +
         versions +
         "' | sed -n \"s/^$name=//p\")\n"
         "case \"$*\" in *--quiet*) [ -n \"$v\" ]; exit ;; esac\n"
         "[ -n \"$v\" ] || { echo \"package $name is not installed\"; exit 1; }\n"
         "printf '%s' \"$v\"";
}

TEST(GpuStackSteps, DriverHoldNamesEveryUnheldPackageOfTheBranch) {
  StepHarness h(GpuStackInventory("ubuntu-22.04", "driver_branch: \"550\""));
  h.StubFixture("dpkg-query", "apt/dpkg-query-nvidia-550.txt");
  h.StubFixture("apt-mark", "apt/apt-mark-showhold-partial.txt");
  const auto run = h.Probe("gpu.driver-hold", "w");
  EXPECT_EQ(run.status, 1) << run.out;
  // The branch's packages, the firmware named after the release included;
  // not the container toolkit, nvidia-prime/-settings, nor the removed 535.
  EXPECT_EQ(run.out,
            "not held: libnvidia-cfg1-550 libnvidia-common-550 libnvidia-compute-550 "
            "libnvidia-decode-550 libnvidia-encode-550 libnvidia-extra-550 libnvidia-fbc1-550 "
            "libnvidia-gl-550 nvidia-compute-utils-550 nvidia-firmware-550-550.127.05 "
            "nvidia-kernel-common-550 nvidia-kernel-source-550 xserver-xorg-video-nvidia-550\n");
}

TEST(GpuStackSteps, DriverHoldIsDoneWhenHeldPackagesShowAsHi) {
  StepHarness h(GpuStackInventory("ubuntu-22.04", "driver_branch: \"550\""));
  h.StubOutput("dpkg-query",
               "hi  nvidia-dkms-550\nhi  nvidia-driver-550\nhi  nvidia-utils-550\n"
               "ii  nvidia-container-toolkit\nun  nvidia-utils\n");
  h.StubFixture("apt-mark", "apt/apt-mark-showhold-partial.txt");
  const auto run = h.Probe("gpu.driver-hold", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(GpuStackSteps, DriverHoldWaitsForTheDriver) {
  StepHarness h(GpuStackInventory("ubuntu-22.04", "driver_branch: \"570\""));
  h.StubFixture("dpkg-query", "apt/dpkg-query-nvidia-550.txt", 1);
  h.StubOutput("apt-mark", "");
  const auto run = h.Probe("gpu.driver-hold", "w");
  EXPECT_EQ(run.status, 3) << run.out;
  EXPECT_EQ(run.out, "no driver packages of branch 570 installed yet\n");
}

TEST(GpuStackSteps, CudnnProbeWantsRuntimeAndHeadersAtTheVersion) {
  StepHarness h(GpuStackInventory("ubuntu-22.04", "cuda: \"12.4\", cudnn: \"9.1\""));
  h.Stub("dpkg-query",
         DpkgVersions("libcudnn9-cuda-12=9.1.1.17-1\nlibcudnn9-dev-cuda-12=9.1.1.17-1"));
  EXPECT_EQ(h.Probe("cuda.cudnn", "w").status, 0);

  // 9.10 is not 9.1: the version must continue with a dot.
  h.Stub("dpkg-query",
         DpkgVersions("libcudnn9-cuda-12=9.10.2.21-1\nlibcudnn9-dev-cuda-12=9.10.2.21-1"));
  auto run = h.Probe("cuda.cudnn", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "libcudnn9-cuda-12 9.10.2.21-1 is installed, want 9.1\n");

  h.Stub("dpkg-query", DpkgVersions("libcudnn9-cuda-12=9.1.1.17-1"));
  run = h.Probe("cuda.cudnn", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "libcudnn9-dev-cuda-12 is not installed\n");
}

TEST(GpuStackSteps, CudnnProbeUsesRhelNamesAndTheCudaMajor) {
  StepHarness h(
      GpuStackInventory("rocky-9", "driver_branch: \"580\", cuda: \"13.0\", cudnn: \"9.13\""));
  h.Stub("rpm", RpmVersions("libcudnn9-cuda-13=9.13.0.50-1\nlibcudnn9-devel-cuda-13=9.13.0.50-1"));
  EXPECT_EQ(h.Probe("cuda.cudnn", "w").status, 0);

  h.Stub("rpm", RpmVersions("libcudnn9-cuda-12=9.13.0.50-1\nlibcudnn9-devel-cuda-12=9.13.0.50-1"));
  const auto run = h.Probe("cuda.cudnn", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "libcudnn9-cuda-13 is not installed\n");
}

// cuDNN 8: one libcudnn8 for every CUDA, the build in the version
// (8.9.7.29-1+cuda12.2; rpm 8.9.7.29-1.cuda12.2, release "1.cuda12.2").
TEST(GpuStackSteps, CudnnEightProbeReadsTheCudaBuildInItsVersion) {
  StepHarness h(GpuStackInventory("ubuntu-22.04", "cuda: \"12.4\", cudnn: \"8.9\""));
  h.Stub("dpkg-query",
         DpkgVersions("libcudnn8=8.9.7.29-1+cuda12.2\nlibcudnn8-dev=8.9.7.29-1+cuda12.2"));
  auto run = h.Probe("cuda.cudnn", "w");
  EXPECT_EQ(run.status, 0) << run.out;

  h.Stub("dpkg-query",
         DpkgVersions("libcudnn8=8.9.7.29-1+cuda11.8\nlibcudnn8-dev=8.9.7.29-1+cuda11.8"));
  run = h.Probe("cuda.cudnn", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "libcudnn8 8.9.7.29-1+cuda11.8 is built for another CUDA (want CUDA 12)\n");

  StepHarness rocky(GpuStackInventory("rocky-9", "cuda: \"12.4\", cudnn: \"8.9\""));
  rocky.Stub("rpm",
             RpmVersions("libcudnn8=8.9.7.29-1.cuda12.2\nlibcudnn8-devel=8.9.7.29-1.cuda12.2"));
  run = rocky.Probe("cuda.cudnn", "w");
  EXPECT_EQ(run.status, 0) << run.out;
  rocky.Stub("rpm", RpmVersions("libcudnn8=8.9.7.29-1.cuda12.2"));
  run = rocky.Probe("cuda.cudnn", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "libcudnn8-devel is not installed\n");
}

// Runs `step`'s change on an Ubuntu GPU node of an inventory with `versions`,
// `apt-cache` answering as `madison` (a stub script) says, nothing installed
// yet; expects it to pass and returns what apt-get was asked.
std::string AptCallsOfChange(const std::string& step, const std::string& versions,
                             const std::string& madison) {
  StepHarness h(GpuStackInventory("ubuntu-22.04", versions));
  h.Stub("apt-cache", madison);
  h.SetEnv("CALLS", (h.dir() / "calls").string());
  h.Stub("apt-get", "echo \"apt-get $*\" >>\"$CALLS\"");
  h.Stub("dpkg-query", "exit 1");
  const auto run = h.Change(step, "w");
  EXPECT_EQ(run.status, 0) << versions << "\n" << run.out;
  return testing::Slurp(h.dir() / "calls");
}

// The change picks the build for the inventory's CUDA, else its major's
// newest, from what madison lists (tests/fixtures/apt).
TEST(GpuStackSteps, CudnnEightInstallsTheBuildForTheInventorysCuda) {
  struct Case {
    std::string versions, want;
  };
  for (const Case& c :
       {Case{"cuda: \"12.2\", cudnn: \"8.9\"", "8.9.7.29-1+cuda12.2"},
        Case{"cuda: \"12.4\", cudnn: \"8.9.2\"", "8.9.2.26-1+cuda12.1"},
        Case{"cuda: \"11.8\", driver_branch: \"535\", cudnn: \"8.8\"", "8.8.1.3-1+cuda11.8"}}) {
    const std::string calls = AptCallsOfChange(
        "cuda.cudnn", c.versions,
        "cat '" + StepHarness::Fixture("apt/apt-cache-madison-libcudnn8.txt") + "'");
    EXPECT_NE(calls.find("libcudnn8=" + c.want + " libcudnn8-dev=" + c.want + "\n"),
              std::string::npos)
        << c.versions << "\n"
        << calls;
  }
  // No build for the CUDA major: the change names what it looked for.
  StepHarness h(GpuStackInventory("ubuntu-22.04", "cuda: \"12.4\", cudnn: \"8.7\""));
  h.StubFixture("apt-cache", "apt/apt-cache-madison-libcudnn8.txt");
  const auto run = h.Change("cuda.cudnn", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("no libcudnn8 8.7 built for CUDA 12 in the node's repositories"),
            std::string::npos)
      << run.out;
}

// NCCL runs on a newer CUDA than it was built for: the build for the
// inventory's CUDA, else its major's newest, else the newest of all.
TEST(GpuStackSteps, NcclInstallsTheBuildForTheInventorysCudaElseAny) {
  struct Case {
    std::string cuda, want;
  };
  for (const Case& c : {Case{"12.2", "2.21.5-1+cuda12.2"}, Case{"12.6", "2.21.5-1+cuda12.4"},
                        Case{"13.0", "2.21.5-1+cuda12.4"}}) {
    const std::string calls = AptCallsOfChange(
        "cuda.nccl", "driver_branch: \"580\", cuda: \"" + c.cuda + "\", nccl: \"2.21\"",
        "printf ' libnccl2 | %s | https://example.invalid  Packages\\n' 2.21.5-1+cuda11.0 "
        "2.21.5-1+cuda12.2 2.21.5-1+cuda12.4");
    EXPECT_NE(calls.find("libnccl2=" + c.want + " libnccl-dev=" + c.want + "\n"), std::string::npos)
        << c.cuda << "\n"
        << calls;
  }
}

TEST(GpuStackSteps, NcclProbeReadsNvidiasVersionFormat) {
  StepHarness h(GpuStackInventory("ubuntu-22.04", "nccl: \"2.21\""));
  h.Stub("dpkg-query", DpkgVersions("libnccl2=2.21.5-1+cuda12.4\nlibnccl-dev=2.21.5-1+cuda12.4"));
  EXPECT_EQ(h.Probe("cuda.nccl", "w").status, 0);

  h.Stub("dpkg-query", DpkgVersions("libnccl2=2.23.4-1+cuda12.6\nlibnccl-dev=2.23.4-1+cuda12.6"));
  const auto run = h.Probe("cuda.nccl", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "libnccl2 2.23.4-1+cuda12.6 is installed, want 2.21\n");
}

TEST(GpuStackSteps, NcclProbeOnRhelNamesTheMissingDevelPackage) {
  StepHarness h(GpuStackInventory("rocky-9", "nccl: \"2.21.5\""));
  h.Stub("rpm", RpmVersions("libnccl=2.21.5-1+cuda12.4"));
  const auto run = h.Probe("cuda.nccl", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "libnccl-devel is not installed\n");
}

}  // namespace
}  // namespace gpuctl
