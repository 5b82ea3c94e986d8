// The repository steps (playbooks/12-repos.yaml) and the prelude's repo_*
// functions, run on this machine with real gpg and two throwaway keys made
// in a temporary GNUPGHOME: a probe sees the keyring and the source file
// exactly as gpuctl writes them, says in one line what differs, and the
// change refuses a key whose fingerprint is not the pinned one, naming both.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

namespace fs = std::filesystem;

// Two OpenPGP keys, each exported armored to <dir>/<name>.asc and binary to
// <dir>/<name>.gpg, made by gpg in a GNUPGHOME of their own.
class Keys {
 public:
  Keys() {
    char pattern[] = "/tmp/gpuctl-repo-keys-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    fs::create_directories(dir_ / "home");
    fs::permissions(dir_ / "home", fs::perms::owner_all);
    std::ofstream(dir_ / "home/common.conf");  // no keyboxd left behind
    a_ = Make("a");
    b_ = Make("b");
  }
  ~Keys() {
    Run("gpgconf --kill all");
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  Keys(const Keys&) = delete;
  Keys& operator=(const Keys&) = delete;

  [[nodiscard]] const std::string& a() const { return a_; }
  [[nodiscard]] const std::string& b() const { return b_; }
  [[nodiscard]] std::string Path(const std::string& file) const { return (dir_ / file).string(); }
  [[nodiscard]] std::string Text(const std::string& file) const {
    std::ifstream in(dir_ / file, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }
  static bool HaveGpg() { return std::system("gpg --version >/dev/null 2>&1") == 0; }

 private:
  std::string Run(const std::string& command) const {
    const std::string full = "GNUPGHOME=" + ShellQuote((dir_ / "home").string()) + " " + command;
    std::string out;
    FILE* pipe = popen(full.c_str(), "r");
    if (pipe == nullptr) return out;
    char buffer[512];
    std::size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    pclose(pipe);
    return out;
  }
  std::string Make(const std::string& name) {
    const std::string uid = "gpuctl test " + name + " <" + name + "@test.invalid>";
    Run("gpg --batch --quiet --passphrase '' --quick-gen-key " + ShellQuote(uid) +
        " ed25519 sign never 2>/dev/null");
    std::string fpr = Run("gpg --batch --with-colons --list-keys " + ShellQuote(uid) +
                          " 2>/dev/null | awk -F: '$1 == \"fpr\" { print $10; exit }'");
    while (!fpr.empty() && fpr.back() == '\n') fpr.pop_back();
    Run("gpg --batch --armor --export " + fpr + " >" + ShellQuote(Path(name + ".asc")));
    Run("gpg --batch --export " + fpr + " >" + ShellQuote(Path(name + ".gpg")));
    return fpr;
  }

  fs::path dir_;
  std::string a_;
  std::string b_;
};

// u: ubuntu-22.04 GPU master with Kubernetes; r: rocky-9 GPU worker with IB.
// Every repository is pinned to `fpr` and, for the change, keyed by `key`.
std::string ReposInventory(const std::string& fpr, const std::string& key = "",
                           const std::string& extra = "") {
  std::string text =
      "cluster: t\n" + extra +
      "nodes:\n"
      "  - name: u\n    address: 198.18.0.1\n    os: ubuntu-22.04\n    roles: [master]\n"
      "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}, ib: [{device: "
      "mlx5_0}]}\n"
      "  - name: r\n    address: 198.18.0.2\n    os: rocky-9\n    roles: [worker]\n"
      "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}, ib: [{device: "
      "mlx5_0}]}\n"
      "repositories:\n";
  for (const char* name :
       {"cuda", "container-toolkit", "kubernetes", "docker", "ofed", "epel", "helm"}) {
    text += std::string("  ") + name + ": {url: http://mirror.lab:8642/" + name +
            ", fingerprint: " + fpr + (key.empty() ? "" : ", key: " + key) + "}\n";
  }
  return text;
}

// Each step on the node it applies to (the probe of every family).
const std::vector<std::pair<std::string, std::string>>& StepNodes() {
  static const std::vector<std::pair<std::string, std::string>> kSteps = {
      {"repos.cuda", "u"},       {"repos.cuda", "r"},   {"repos.container-toolkit", "u"},
      {"repos.kubernetes", "r"}, {"repos.docker", "r"}, {"repos.ofed", "u"},
      {"repos.ofed", "r"},       {"repos.epel", "r"},   {"repos.helm", "u"},
  };
  return kSteps;
}

std::string KeyringPath(const std::string& step, const std::string& node) {
  const std::string name = step.substr(6);
  return node == "u" ? "/etc/apt/keyrings/gpuctl-" + name + ".gpg"
                     : "/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuctl-" + name;
}
std::string SourcePath(const std::string& step, const std::string& node) {
  const std::string name = step.substr(6);
  return node == "u" ? "/etc/apt/sources.list.d/gpuctl-" + name + ".sources"
                     : "/etc/yum.repos.d/gpuctl-" + name + ".repo";
}

// VERSION_ID of this host's /etc/os-release, as the prelude reads it.
std::string OsVersionId() {
  std::string out;
  FILE* pipe = popen(". /etc/os-release && printf %s \"$VERSION_ID\"", "r");
  if (pipe == nullptr) return out;
  char buffer[64];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

TEST(ReposSteps, AFreshNodeNeedsEveryRepository) {
  if (!Keys::HaveGpg()) GTEST_SKIP() << "gpg is not installed";
  if (fs::exists("/etc/apt/keyrings/gpuctl-cuda.gpg")) GTEST_SKIP() << "this host has gpuctl's";
  StepHarness h(ReposInventory("EB693B3035CD5710E231E123A4B469963BF863CC"));
  for (const auto& [step, node] : StepNodes()) {
    if (step == "repos.cuda" && node == "r") continue;  // covered by the next tests
    const auto run = h.Probe(step, node);
    EXPECT_EQ(run.status, 1) << step << " on " << node << ": " << run.out;
    EXPECT_NE(run.out.find(KeyringPath(step, node) + " is missing"), std::string::npos)
        << step << ": " << run.out;
  }
}

TEST(ReposSteps, DoneWhenKeyringAndSourceAreGpuctls) {
  if (!Keys::HaveGpg()) GTEST_SKIP() << "gpg is not installed";
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  Keys keys;
  // One harness per family: the dnf files' directories are made by an
  // overlay over /etc, which would hide one over /etc/apt.
  StepHarness apt(ReposInventory(keys.a()));
  apt.File(KeyringPath("repos.cuda", "u"), keys.Text("a.gpg"));
  apt.File(SourcePath("repos.cuda", "u"),
           "# Written by gpuctl (step repos.cuda) from the inventory; edits are replaced.\n"
           "Types: deb\nURIs: http://mirror.lab:8642/cuda/ubuntu2204/x86_64/\nSuites: /\n"
           "Signed-By: /etc/apt/keyrings/gpuctl-cuda.gpg\n");
  auto run = apt.Probe("repos.cuda", "u");
  EXPECT_EQ(run.status, 0) << run.out;

  // Mellanox's directory is named by the node's own VERSION_ID (this host's).
  const std::string version_id = OsVersionId();
  StepHarness dnf(ReposInventory(keys.a(), "", "versions: {kubernetes: \"1.31\"}\n"));
  dnf.File(KeyringPath("repos.ofed", "r"), keys.Text("a.asc"));
  dnf.File(SourcePath("repos.ofed", "r"),
           "# Written by gpuctl (step repos.ofed) from the inventory; edits are replaced.\n"
           "[gpuctl-ofed]\nname=gpuctl: ofed\n"
           "baseurl=http://mirror.lab:8642/ofed/latest-24.01/rhel" +
               version_id +
               "/x86_64/\n"
               "enabled=1\ngpgcheck=1\ngpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpuctl-ofed\n");
  dnf.File(KeyringPath("repos.kubernetes", "r"), keys.Text("a.asc"));
  dnf.File(SourcePath("repos.kubernetes", "r"),
           "# Written by gpuctl (step repos.kubernetes) from the inventory; edits are replaced.\n"
           "[gpuctl-kubernetes]\nname=gpuctl: kubernetes\n"
           "baseurl=http://mirror.lab:8642/kubernetes/v1.31/rpm/\nenabled=1\ngpgcheck=1\n"
           "repo_gpgcheck=1\ngpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpuctl-kubernetes\n");
  for (const char* step : {"repos.ofed", "repos.kubernetes"}) {
    run = dnf.Probe(step, "r");
    EXPECT_EQ(run.status, 0) << step << ": " << run.out;
  }
}

TEST(ReposSteps, SaysWhatDiffersInOneLine) {
  if (!Keys::HaveGpg()) GTEST_SKIP() << "gpg is not installed";
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  Keys keys;
  StepHarness h(ReposInventory(keys.a()));
  // Someone else's key under gpuctl's name: named with the pinned one.
  h.File(KeyringPath("repos.cuda", "r"), keys.Text("b.asc"));
  h.File(SourcePath("repos.cuda", "r"), "[gpuctl-cuda]\n");
  auto run = h.Probe("repos.cuda", "r");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("holds key " + keys.b() + " (want " + keys.a() + ")"), std::string::npos)
      << run.out;
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << run.out;

  // The right key; a source another tool edited (gpgcheck off).
  StepHarness g(ReposInventory(keys.a()));
  g.File(KeyringPath("repos.docker", "r"), keys.Text("a.asc"));
  g.File(SourcePath("repos.docker", "r"),
         "# Written by gpuctl (step repos.docker) from the inventory; edits are replaced.\n"
         "[gpuctl-docker]\nname=gpuctl: docker\n"
         "baseurl=http://mirror.lab:8642/docker/centos/9/x86_64/stable/\nenabled=1\ngpgcheck=0\n"
         "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpuctl-docker\n");
  run = g.Probe("repos.docker", "r");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("gpuctl-docker.repo line 6 is \"gpgcheck=0\" (want \"gpgcheck=1\")"),
            std::string::npos)
      << run.out;
}

TEST(ReposSteps, ARepositoryWithoutAPinnedKeyIsNeverAdded) {
  if (!Keys::HaveGpg()) GTEST_SKIP() << "gpg is not installed";
  // No fingerprint for OFED upstream (docs/repositories.md#ofed).
  StepHarness h(
      "cluster: t\nnodes:\n  - name: u\n    address: 198.18.0.1\n    os: ubuntu-22.04\n"
      "    roles: [master]\n    hardware: {ib: [{device: mlx5_0}]}\n");
  auto run = h.Probe("repos.ofed", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("set repositories.ofed.fingerprint"), std::string::npos) << run.out;
  run = h.Change("repos.ofed", "u");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.out.find("has no pinned key"), std::string::npos) << run.out;
}

TEST(ReposSteps, AKeyWithAnotherFingerprintIsRefusedNamingBoth) {
  if (!Keys::HaveGpg()) GTEST_SKIP() << "gpg is not installed";
  Keys keys;
  // The inventory pins key a; the file the key points at holds key b.
  for (const char* file : {"b.asc", "b.gpg"}) {
    StepHarness h(ReposInventory(keys.a(), keys.Path(file)));
    for (const char* node : {"u", "r"}) {
      const auto run = h.Change("repos.cuda", node);
      EXPECT_NE(run.status, 0) << file << " " << node << ": " << run.out;
      EXPECT_NE(
          run.out.find("refusing the key of repository cuda from " + keys.Path(file) +
                       ": its fingerprint is " + keys.b() + ", the inventory pins " + keys.a()),
          std::string::npos)
          << run.out;
    }
  }
  EXPECT_FALSE(fs::exists("/etc/apt/keyrings/gpuctl-cuda.gpg"));
  // Not a key at all.
  StepHarness h(ReposInventory(keys.a(), keys.Path("home/common.conf")));
  const auto run = h.Change("repos.cuda", "u");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.out.find("its fingerprint is unreadable (no OpenPGP key)"), std::string::npos)
      << run.out;
}

}  // namespace
}  // namespace gpuctl
