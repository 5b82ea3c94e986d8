// lab/build-repo.sh builds the flat apt and the dnf repositories the lab's
// nodes install from. Slow-ish (it builds every stand-in): filter it out with
// --gtest_filter=-*Repo* or ctest -E Repo.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

bool Have(const std::string& tool) {
  return RunShell("command -v " + tool + " >/dev/null 2>&1").status == 0;
}

TEST(StandinRepo, BuildsDebAndRpmReposFromTheStandins) {
  for (const char* tool : {"dpkg-deb", "dpkg-scanpackages", "rpmbuild", "createrepo_c"}) {
    if (!Have(tool)) GTEST_SKIP() << tool << " missing (scripts/install-deps.sh lab)";
  }
  StandinNode scratch;  // only for its temporary directory
  std::filesystem::path out = scratch.root() / "repo";
  std::string build = Quote(std::string(GPUCTL_SOURCE_DIR) + "/lab/build-repo.sh") +
                      " --no-mirror " + Quote(out.string()) + " 2>&1";
  RunResult first = RunShell(build);
  ASSERT_EQ(first.status, 0) << first.out;

  std::string packages = ReadFile(out / "deb/Packages");
  for (const char* name : {"nvidia-driver-550", "nvidia-utils-580", "cuda-toolkit-12-4", "libnccl2",
                           "mlnx-ofed-all", "nvidia-container-toolkit"}) {
    EXPECT_NE(packages.find(std::string("Package: ") + name + "\n"), std::string::npos) << name;
  }
  EXPECT_TRUE(std::filesystem::exists(out / "deb/Packages.gz"));
  EXPECT_TRUE(std::filesystem::exists(out / "rpm/repodata/repomd.xml"));
  EXPECT_TRUE(std::filesystem::exists(out / "rpm/gpuctl-lab-rocky-base-9.4-1.noarch.rpm"));
  EXPECT_TRUE(std::filesystem::exists(out / "rpm/cuda-drivers-550.127.05-1.noarch.rpm"));

  // The CUDA 13.0 stand-in's nvcc says what the real one said on the H100.
  std::filesystem::path unpacked = scratch.root() / "unpacked";
  ASSERT_EQ(
      RunShell("dpkg-deb -x " + Quote((out / "deb/cuda-toolkit-13-0_13.0.1-1_all.deb").string()) +
               " " + Quote(unpacked.string()))
          .status,
      0);
  EXPECT_EQ(
      RunShell(Quote((unpacked / "usr/local/cuda-13.0/bin/nvcc").string()) + " --version").out,
      ReadFile(NvidiaFixtures() / "nvcc.txt"));

  RunResult again = RunShell(build);
  EXPECT_EQ(again.status, 0);
  EXPECT_NE(again.out.find("up to date"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace gpuctl::testing
