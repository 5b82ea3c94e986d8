// The .deb that `cpack -G DEB` makes from this build, installed the way an
// admin would: copied onto an Ubuntu lab node and installed with apt. Its
// contents and declared dependencies first (dpkg-deb), then gpuctl runs from
// /usr/bin with the playbooks it installed in /usr/share/gpuctl (the source
// tree's, which a node sees through the host's layer, hidden), and the
// completion and manual page are where bash and man look.
//
// The runtime libraries (libssh-4, libyaml-cpp0.7, libfmt9, libspdlog1.10,
// libtcmalloc-minimal4) are not in the lab's Ubuntu archive: apt finds them
// already installed, because an Ubuntu-like node's dpkg database and /usr
// are the host's (docs/lab.md, "OS identity"), where the build installed
// their -dev packages. What is tested is the package; not that a bare Ubuntu can fetch
// them.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::Lab;
using test::Quote;
using test::Result;
using test::Shell;
using test::Trim;
namespace fs = std::filesystem;

class PackageLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    // The package of this very build: cpack reads the build dir's
    // CPackConfig.cmake beside the binary and writes into a dir of ours.
    const fs::path build = fs::path(GPUCTL_BINARY).parent_path();
    dir_ = fs::temp_directory_path() / fmt::format("gpuctl-package-test-{}", getpid());
    fs::create_directories(dir_);
    const Result cpack =
        Shell("cd " + Quote(dir_.string()) + " && cpack -G DEB -B " + Quote(dir_.string()) +
              " --config " + Quote((build / "CPackConfig.cmake").string()) + " 2>&1");
    ASSERT_EQ(cpack.status, 0) << cpack.out;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().extension() == ".deb") deb_ = entry.path();
    }
    ASSERT_FALSE(deb_.empty()) << cpack.out;
    lab_ = std::make_unique<Lab>(fmt::format("pk{}", getpid()));
    std::string log;
    ASSERT_TRUE(lab_->Up(&log, "--nodes 1")) << log;  // master1, Ubuntu 22.04
  }
  void TearDown() override {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  Result OnNode(const std::string& command) const {
    return lab_->Ssh("master1", command + " 2>&1");
  }

  std::unique_ptr<Lab> lab_;
  fs::path dir_;
  fs::path deb_;
};

TEST_F(PackageLabTest, DebInstallsWithAptAndRunsFromUsr) {
  // What the package says and holds.
  const Result info = Shell("dpkg-deb -f " + Quote(deb_.string()) + " Package Depends");
  ASSERT_EQ(info.status, 0) << info.out;
  EXPECT_NE(info.out.find("Package: gpuctl"), std::string::npos) << info.out;
  for (const char* library :
       {"libssh-4", "libyaml-cpp0.7", "libfmt9", "libspdlog1.10", "libtcmalloc-minimal4"}) {
    EXPECT_NE(info.out.find(library), std::string::npos) << library << "\n" << info.out;
  }
  const Result contents = Shell("dpkg-deb -c " + Quote(deb_.string()));
  ASSERT_EQ(contents.status, 0) << contents.out;
  for (const char* path :
       {"./usr/bin/gpuctl", "./usr/share/gpuctl/playbooks/prelude.sh",
        "./usr/share/gpuctl/playbooks/20-gpu.yaml", "./usr/share/gpuctl/lab/gpuctl-lab",
        "./usr/share/bash-completion/completions/gpuctl",
        "./usr/share/zsh/vendor-completions/_gpuctl",
        "./usr/share/fish/vendor_completions.d/gpuctl.fish", "./usr/share/man/man1/gpuctl.1.gz"}) {
    EXPECT_NE(contents.out.find(std::string(path) + "\n"), std::string::npos) << path;
  }

  // Onto the node over ssh, and apt installs it.
  const Result copy =
      Shell("scp -q -i " + Quote(lab_->Env("LAB_KEY")) +
            " -o UserKnownHostsFile=" + Quote(lab_->Env("LAB_KNOWN_HOSTS")) +
            " -o StrictHostKeyChecking=yes -o BatchMode=yes " + Quote(deb_.string()) + " root@" +
            lab_->Node("master1").address + ":/root/gpuctl.deb 2>&1");
  ASSERT_EQ(copy.status, 0) << copy.out;
  const Result install =
      OnNode("cd /root && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./gpuctl.deb");
  ASSERT_EQ(install.status, 0) << install.out;
  EXPECT_EQ(Trim(OnNode("command -v gpuctl").out), "/usr/bin/gpuctl");
  EXPECT_EQ(Trim(OnNode("dpkg-query -W -f='${Status}' gpuctl").out), "install ok installed");

  const Result version = OnNode("gpuctl --version");
  EXPECT_EQ(version.status, 0) << version.out;
  EXPECT_EQ(Trim(version.out), std::string("gpuctl ") + GPUCTL_VERSION);

  // An inventory written by the installed gpuctl, validated against the
  // installed catalog: the source tree's playbooks, which the node sees
  // through the host's layer, are hidden under an empty tmpfs.
  const std::string source_playbooks = std::string(GPUCTL_SOURCE_DIR) + "/playbooks";
  const Result validate = OnNode(
      "cd /root && gpuctl init --master head --workers 'gpu[01-02]' --addresses 10.0.1.10 && "
      "unshare --mount sh -c " +
      Quote("mount -t tmpfs none " + Quote(source_playbooks) + " && ls " + Quote(source_playbooks) +
            " | wc -l && gpuctl validate inventory.yaml"));
  EXPECT_EQ(validate.status, 0) << validate.out;
  EXPECT_NE(validate.out.find("\n0\n"), std::string::npos) << validate.out;  // hidden indeed
  EXPECT_NE(validate.out.find("inventory.yaml: ok (3 nodes, "), std::string::npos) << validate.out;

  // bash-completion's and man's own places.
  const Result completion = OnNode(
      "bash -c 'source /usr/share/bash-completion/completions/gpuctl && complete -p gpuctl'");
  EXPECT_EQ(Trim(completion.out), "complete -o default -F _gpuctl gpuctl") << completion.out;
  const Result man = OnNode("zcat /usr/share/man/man1/gpuctl.1.gz | head -3");
  EXPECT_NE(man.out.find(".TH GPUCTL 1"), std::string::npos) << man.out;
}

}  // namespace
}  // namespace gpuctl
