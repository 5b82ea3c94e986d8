// lab/build-repo.sh builds the lab's package repositories: Ubuntu's and Rocky's
// archives and the vendors' repositories, laid out as the real ones and signed
// by a lab key each. The build takes minutes (it builds every stand-in), so
// this test checks the tree every lab serves (`gpuctl-lab repo`), built once
// for all the lab tests, rather than building a private copy.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>

#include "support/lab_support.h"
#include "unit/standin_node.h"

namespace gpuctl::testing {
namespace {

namespace fs = std::filesystem;

bool Have(const std::string& tool) {
  return RunShell("command -v " + tool + " >/dev/null 2>&1").status == 0;
}

// apt-get update against one deb822 source, in a private apt state under
// `dir` (nothing of the host's apt is read or written), with `keyring`
// (binary) as the source's Signed-By. Output and status of apt-get update.
RunResult AptUpdate(const fs::path& dir, const std::string& source, const fs::path& keyring) {
  fs::create_directories(dir / "parts");
  fs::create_directories(dir / "lists/partial");
  fs::create_directories(dir / "cache");
  const std::string sources = source + "Signed-By: " + keyring.string() + "\n";
  RunShell("printf '%s' " + Quote(sources) + " > " + Quote((dir / "parts/t.sources").string()));
  return RunShell("apt-get update -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=" +
                  Quote((dir / "parts").string()) +
                  " -o Dir::State::Lists=" + Quote((dir / "lists").string()) +
                  " -o Dir::Cache=" + Quote((dir / "cache").string()) +
                  " -o APT::Update::Error-Mode=any -o APT::Sandbox::User=root"
                  " -o APT::Update::Post-Invoke-Success::= -o APT::Update::Post-Invoke::= 2>&1");
}

// dnf makecache of one repository with gpgcheck and repo_gpgcheck, its key
// from `key`, into a throwaway installroot.
RunResult DnfMakecache(const fs::path& dir, const fs::path& baseurl, const fs::path& key) {
  fs::create_directories(dir / "root");
  const std::string conf = "[main]\nreposdir=/dev/null\ncachedir=" + (dir / "cache").string() +
                           "\n[t]\nname=t\nbaseurl=file://" + baseurl.string() +
                           "\ngpgcheck=1\nrepo_gpgcheck=1\ngpgkey=file://" + key.string() + "\n";
  RunShell("printf '%s' " + Quote(conf) + " > " + Quote((dir / "dnf.conf").string()));
  return RunShell("dnf -y -q -c " + Quote((dir / "dnf.conf").string()) + " --installroot=" +
                  Quote((dir / "root").string()) + " --releasever=9 makecache 2>&1");
}

TEST(LabRepoTest, SignedDistroAndVendorReposBuiltFromTheStandins) {
  if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
  for (const char* tool :
       {"dpkg-deb", "dpkg-scanpackages", "rpmbuild", "createrepo_c", "gpg", "rpmsign"}) {
    ASSERT_TRUE(Have(tool)) << tool << " missing (scripts/install-deps.sh lab)";
  }
  StandinNode scratch;  // only for its temporary directory
  // stdout is the path alone; the build's progress goes to stderr.
  const RunResult repo =
      RunShell(Quote(std::string(GPUCTL_SOURCE_DIR) + "/lab/gpuctl-lab") + " repo");
  ASSERT_EQ(repo.status, 0) << "gpuctl-lab repo failed (its log is beside the repository)";
  const fs::path out = test::Trim(repo.out);
  ASSERT_TRUE(fs::is_directory(out)) << repo.out;
  const std::string build = Quote(std::string(GPUCTL_SOURCE_DIR) + "/lab/build-repo.sh") + " " +
                            Quote(out.string()) + " 2>&1";

  // Each package in the repository its package.sh names, where the real one
  // keeps it: Ubuntu's driver in the archive's restricted component, CUDA and
  // the container toolkit only in NVIDIA's repositories.
  std::string restricted = ReadFile(out / "ubuntu/dists/jammy/restricted/binary-amd64/Packages");
  EXPECT_NE(restricted.find("Package: nvidia-driver-550\n"), std::string::npos);
  EXPECT_NE(restricted.find("Package: nvidia-utils-580\n"), std::string::npos);
  std::string cuda = ReadFile(out / "cuda/ubuntu2204/x86_64/Packages");
  for (const char* name : {"cuda-toolkit-12-4", "libnccl2", "datacenter-gpu-manager"}) {
    EXPECT_NE(cuda.find(std::string("Package: ") + name + "\n"), std::string::npos) << name;
  }
  EXPECT_NE(ReadFile(out / "container-toolkit/stable/deb/amd64/Packages")
                .find("Package: nvidia-container-toolkit\n"),
            std::string::npos);
  EXPECT_NE(ReadFile(out / "ofed/latest-24.01/ubuntu22.04/amd64/Packages")
                .find("Package: mlnx-ofed-all\n"),
            std::string::npos);
  EXPECT_NE(ReadFile(out / "kubernetes/v1.30/deb/Packages").find("Version: 1.30.6-1.1\n"),
            std::string::npos);
  std::string archive;
  for (const char* c : {"main", "restricted", "universe"}) {
    archive += ReadFile(out / "ubuntu/dists/jammy" / c / "binary-amd64/Packages");
  }
  for (const char* vendor : {"cuda-toolkit", "nvidia-container-toolkit", "kubeadm",
                             "datacenter-gpu-manager", "mlnx-ofed-all", "docker-ce"}) {
    EXPECT_EQ(archive.find(std::string("Package: ") + vendor), std::string::npos) << vendor;
  }
  EXPECT_TRUE(
      fs::exists(out / "rocky/9/BaseOS/x86_64/os/Packages/gpuctl-lab-rocky-base-9.4-1.noarch.rpm"));
  EXPECT_TRUE(fs::exists(out / "cuda/rhel9/x86_64/Packages/cuda-drivers-550.127.05-1.noarch.rpm"));
  EXPECT_FALSE(fs::exists(out / "deb")) << "the old single repository";
  for (const char* signature :
       {"ubuntu/dists/jammy/InRelease", "ubuntu/dists/jammy/Release.gpg",
        "cuda/ubuntu2204/x86_64/InRelease", "rocky/9/BaseOS/x86_64/os/repodata/repomd.xml.asc",
        "cuda/rhel9/x86_64/repodata/repomd.xml.asc", "keys/cuda.asc", "keys/wrongkey.asc"}) {
    EXPECT_TRUE(fs::exists(out / signature)) << signature;
  }
  // rpms carry a signature by their repository's key (rpm names its key ID,
  // the fingerprint's last 16 hex digits, in lower case).
  RunResult sig = RunShell("rpm -qpi " +
                           Quote((out / "cuda/rhel9/x86_64/Packages/"
                                        "cuda-drivers-550.127.05-1.noarch.rpm")
                                     .string()) +
                           " 2>/dev/null | grep '^Signature'");
  std::string cuda_fpr;
  std::istringstream fingerprints(ReadFile(out / "keys/FINGERPRINTS"));
  for (std::string name, fpr; fingerprints >> name >> fpr;) {
    if (name == "cuda") cuda_fpr = fpr;
  }
  ASSERT_EQ(cuda_fpr.size(), 40U);
  std::string key_id = cuda_fpr.substr(24);
  for (char& c : key_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_NE(sig.out.find("RSA/SHA"), std::string::npos) << sig.out;
  EXPECT_NE(sig.out.find("Key ID " + key_id), std::string::npos) << sig.out;

  // apt accepts the Ubuntu archive and the CUDA repository with their
  // published keys, and refuses the wrong-key copy of the toolkit's.
  fs::path keys = scratch.root() / "keys";
  fs::create_directories(keys);
  for (const char* k : {"cuda", "container-toolkit"}) {
    ASSERT_EQ(
        RunShell("gpg --dearmor < " + Quote((out / "keys" / (std::string(k) + ".asc")).string()) +
                 " > " + Quote((keys / (std::string(k) + ".gpg")).string()))
            .status,
        0);
  }
  RunResult ubuntu = AptUpdate(scratch.root() / "apt-ubuntu",
                               "Types: deb\nURIs: file:" + (out / "ubuntu").string() +
                                   "\nSuites: jammy\nComponents: main restricted universe\n",
                               out / "keys/ubuntu.gpg");
  EXPECT_EQ(ubuntu.status, 0) << ubuntu.out;
  RunResult flat = AptUpdate(
      scratch.root() / "apt-cuda",
      "Types: deb\nURIs: file:" + (out / "cuda/ubuntu2204/x86_64").string() + "/\nSuites: /\n",
      keys / "cuda.gpg");
  EXPECT_EQ(flat.status, 0) << flat.out;
  RunResult wrong = AptUpdate(
      scratch.root() / "apt-wrong",
      "Types: deb\nURIs: file:" + (out / "wrongkey/stable/deb/amd64").string() + "/\nSuites: /\n",
      keys / "container-toolkit.gpg");
  EXPECT_NE(wrong.status, 0) << wrong.out;
  EXPECT_NE(wrong.out.find("NO_PUBKEY"), std::string::npos) << wrong.out;

  // dnf likewise: metadata signed by the key it was given, or refused.
  if (Have("dnf")) {
    RunResult good =
        DnfMakecache(scratch.root() / "dnf-good", out / "container-toolkit/stable/rpm/x86_64",
                     out / "keys/container-toolkit.asc");
    EXPECT_EQ(good.status, 0) << good.out;
    RunResult bad = DnfMakecache(scratch.root() / "dnf-bad", out / "wrongkey/stable/rpm/x86_64",
                                 out / "keys/container-toolkit.asc");
    EXPECT_NE(bad.status, 0) << bad.out;
    EXPECT_NE(bad.out.find("GPG"), std::string::npos) << bad.out;
  }

  // The CUDA 13.0 stand-in's nvcc says what the real one said on the H100.
  fs::path unpacked = scratch.root() / "unpacked";
  ASSERT_EQ(
      RunShell("dpkg-deb -x " +
               Quote((out / "cuda/ubuntu2204/x86_64/cuda-toolkit-13-0_13.0.1-1_all.deb").string()) +
               " " + Quote(unpacked.string()))
          .status,
      0);
  EXPECT_EQ(
      RunShell(Quote((unpacked / "usr/local/cuda-13.0/bin/nvcc").string()) + " --version").out,
      ReadFile(NvidiaFixtures() / "nvcc.txt"));

  // A second build does nothing.
  RunResult again = RunShell(build);
  EXPECT_EQ(again.status, 0);
  EXPECT_NE(again.out.find("up to date"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace gpuctl::testing
