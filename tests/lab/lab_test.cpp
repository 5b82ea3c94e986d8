// Lab tests: bring up a small lab of their own (lab/gpuctl-lab, its own
// --name so the demo lab can stay up) and check what the lab promises: real
// sshd per node with its own identity, isolated disks, both OS families,
// reboots that are real, and a `down` that leaves nothing behind.
//
// ctest runs each case in its own process (gtest_discover_tests), so each
// process brings up its own three-node lab: master1, worker1 (Ubuntu-like),
// worker2 (Rocky-like). Needs root, `ip netns` and unshare; skips otherwise.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gpuctl/diagnostic.h"
#include "gpuctl/inventory.h"
#include "support/lab_support.h"

namespace gpuctl {
namespace {

using namespace gpuctl::test;  // NOLINT: the lab helpers read as a small DSL here

class LabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = new std::string(MissingPrerequisite());
    if (!skip_reason_->empty()) return;
    lab_ = new Lab("t" + std::to_string(getpid()));
    std::string log;
    if (!lab_->Up(&log)) {
      *skip_reason_ = "";
      up_error_ = new std::string("gpuctl-lab up failed:\n" + log);
    }
  }

  static void TearDownTestSuite() {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
    delete lab_;
    delete skip_reason_;
    delete up_error_;
    lab_ = nullptr;
    skip_reason_ = nullptr;
    up_error_ = nullptr;
  }

  void SetUp() override {
    if (!skip_reason_->empty()) GTEST_SKIP() << *skip_reason_;
    ASSERT_EQ(up_error_, nullptr) << *up_error_;
  }

  static Lab& lab() { return *lab_; }

 private:
  static Lab* lab_;
  static std::string* skip_reason_;
  static std::string* up_error_;
};

Lab* LabTest::lab_ = nullptr;
std::string* LabTest::skip_reason_ = nullptr;
std::string* LabTest::up_error_ = nullptr;

TEST_F(LabTest, NodeAnswersSshWithItsOwnHostnameAndAddress) {
  ASSERT_EQ(lab().nodes().size(), 3U);
  for (const LabNode& node : lab().nodes()) {
    const Result r = lab().Ssh(node.name, "hostname; ip -4 -o addr show dev eth0");
    ASSERT_EQ(r.status, 0) << node.name << ": " << r.out;
    std::istringstream lines(r.out);
    std::string hostname;
    std::string addr_line;
    std::getline(lines, hostname);
    std::getline(lines, addr_line);
    EXPECT_EQ(hostname, node.name);
    EXPECT_NE(addr_line.find(" " + node.address + "/24 "), std::string::npos) << addr_line;
  }
}

TEST_F(LabTest, SystemdIsPidOneAndTheNodeIsRunning) {
  const Result r = lab().Ssh("worker1", "cat /proc/1/comm; systemctl is-system-running --wait");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "systemd\nrunning\n");
}

TEST_F(LabTest, FileWrittenOnOneNodeStaysOnThatNode) {
  const std::string path = "/root/isolation-" + lab().name();
  ASSERT_EQ(lab().Ssh("worker1", "echo only-here > " + path).status, 0);
  EXPECT_EQ(lab().Ssh("worker1", "cat " + path).out, "only-here\n");
  EXPECT_NE(lab().Ssh("master1", "test -e " + path).status, 0) << "visible on another node";
  EXPECT_NE(lab().Ssh("worker2", "test -e " + path).status, 0) << "visible on another node";
  EXPECT_FALSE(fs::exists(path)) << "visible on the host";
  // It lives in worker1's own disk, the upper layer of its overlay.
  EXPECT_TRUE(fs::exists(fs::path(lab().Env("LAB_STATE")) / "nodes/worker1/upper" /
                         fs::path(path).relative_path()));
}

TEST_F(LabTest, EachNodeServesItsOwnHostKeyListedInKnownHosts) {
  std::map<std::string, std::string> served;
  for (const LabNode& node : lab().nodes()) {
    const Result scan = Shell("ssh-keyscan -T 5 -t ed25519 " + node.address + " 2>/dev/null");
    ASSERT_EQ(scan.status, 0);
    std::istringstream fields(scan.out);
    std::string host;
    std::string type;
    std::string key;
    fields >> host >> type >> key;
    ASSERT_EQ(type, "ssh-ed25519") << node.name;
    served[node.name] = key;
    const std::string known = ReadFile(lab().Env("LAB_KNOWN_HOSTS"));
    EXPECT_NE(known.find(node.name + "," + node.address + " ssh-ed25519 " + key), std::string::npos)
        << node.name << " serves a key not in known_hosts";
  }
  EXPECT_NE(served["worker1"], served["worker2"]);
  EXPECT_NE(served["master1"], served["worker1"]);
}

TEST_F(LabTest, UbuntuNodeSeesOnlyTheLabAptRepository) {
  const Result r =
      lab().Ssh("worker1",
                ". /etc/os-release; echo $ID $VERSION_ID; "
                "cat /etc/apt/sources.list.d/*; ls /etc/apt/sources.list 2>&1 | wc -l; "
                "command -v dnf || echo no-dnf");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "ubuntu 22.04\ndeb [trusted=yes] file:/srv/gpuctl-repo/deb ./\n1\nno-dnf\n");
  EXPECT_EQ(lab().Ssh("worker1", "apt-get update -qq").status, 0);
}

TEST_F(LabTest, RockyNodeHasRockyReleaseAndABaseRpm) {
  const Result r =
      lab().Ssh("worker2",
                ". /etc/os-release; echo $ID $VERSION_ID; cat /etc/dnf/vars/releasever; "
                "ls /etc/yum.repos.d; command -v apt-get || echo no-apt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "rocky 9.4\n9\ngpuctl-lab.repo\nno-apt\n");
  if (!fs::exists(std::string(GPUCTL_SOURCE_DIR) + "/lab/build-repo.sh")) {
    GTEST_SKIP() << "lab/build-repo.sh (the stand-ins' repository builder) is not merged yet: "
                    "the repository is empty, so gpuctl-lab-rocky-base cannot be installed";
  }
  const Result rpm = lab().Ssh("worker2", "rpm -q gpuctl-lab-rocky-base");
  EXPECT_EQ(rpm.status, 0) << rpm.out;
}

TEST_F(LabTest, RebootIsRealAndKeepsTheDisk) {
  const std::string before_id =
      Trim(lab().Ssh("worker1", "cat /proc/sys/kernel/random/boot_id").out);
  ASSERT_FALSE(before_id.empty());
  ASSERT_EQ(lab().Ssh("worker1", "echo kept > /root/reboot-marker").status, 0);
  ASSERT_EQ(lab().Ssh("worker1", "setsid sleep 4242 </dev/null >/dev/null 2>&1 & echo started").out,
            "started\n");
  ASSERT_EQ(lab().Ssh("worker1", "pgrep -x sleep -a | grep -c 4242").out, "1\n");

  (void)lab().Ssh("worker1", "systemctl reboot");  // the connection drops: no status

  std::string after_id;
  const bool back = PollUntil(std::chrono::seconds(120), [&] {
    const Result r = lab().Ssh("worker1", "cat /proc/sys/kernel/random/boot_id");
    after_id = Trim(r.out);
    return r.status == 0 && !after_id.empty() && after_id != before_id;
  });
  ASSERT_TRUE(back) << "worker1 did not come back with a new boot id";
  EXPECT_EQ(lab().Ssh("worker1", "cat /root/reboot-marker").out, "kept\n");
  EXPECT_NE(lab().Ssh("worker1", "pgrep -x sleep -a | grep 4242").status, 0)
      << "a process survived the reboot";
  EXPECT_EQ(lab().Ssh("worker1", "cat /run/gpuctl-lab/boot_count").out, "2\n");
  const std::string status = Shell(lab().Tool("status")).out;
  EXPECT_NE(status.find("worker1"), std::string::npos) << status;
}

TEST_F(LabTest, StopKeepsANodeOffUntilStart) {
  ASSERT_EQ(Shell(lab().Tool("stop worker1")).status, 0);
  EXPECT_EQ(Shell(lab().Tool("status") + " | grep '^worker1 ' | grep -qw off").status, 0);
  EXPECT_NE(lab().Ssh("worker1", "true").status, 0) << "a stopped node answered";
  ASSERT_EQ(Shell(lab().Tool("start worker1 --wait")).status, 0);
  EXPECT_EQ(lab().Ssh("worker1", "hostname").out, "worker1\n");
}

TEST_F(LabTest, FaultEditsTheProfileOfARunningNode) {
  ASSERT_EQ(Shell(lab().Tool("fault worker1 gpu-missing=1 ib-down=mlx5_0")).status, 0);
  const Result r =
      lab().Ssh("worker1", ". /etc/gpuctl-lab/profile.env; echo \"$FAULTS|$GPU_COUNT\"");
  EXPECT_EQ(r.out, "gpu-missing=1 ib-down=mlx5_0|8\n");
  ASSERT_EQ(Shell(lab().Tool("fault worker1 --clear")).status, 0);
  EXPECT_EQ(lab().Ssh("worker1", ". /etc/gpuctl-lab/profile.env; echo \"[$FAULTS]\"").out, "[]\n");
}

TEST_F(LabTest, InventoryLoadsWithGpuctl) {
  Diagnostics diagnostics;
  const auto inventory = LoadInventory(lab().Env("LAB_INVENTORY"), diagnostics);
  if (!inventory && diagnostics.Format().find("not implemented") != std::string::npos) {
    GTEST_SKIP() << "the inventory loader is not merged yet";
  }
  ASSERT_TRUE(inventory.has_value()) << diagnostics.Format();
  ASSERT_EQ(inventory->nodes.size(), 3U);
  const Node* worker2 = nullptr;
  for (const Node& node : inventory->nodes) {
    if (node.name == "worker2") worker2 = &node;
  }
  ASSERT_NE(worker2, nullptr);
  EXPECT_EQ(worker2->os.Name(), "rocky-9");
  EXPECT_EQ(worker2->GpuCount(), 8);
  ASSERT_EQ(worker2->hardware.ib.size(), 2U);
  EXPECT_EQ(worker2->hardware.ib[0].rate_gbps, 200);
  EXPECT_EQ(inventory->ssh.known_hosts, lab().Env("LAB_KNOWN_HOSTS"));
}

// Runs `down` itself (the suite's teardown then finds nothing to do) and
// checks from the host's side that nothing of the lab is left.
TEST_F(LabTest, DownLeavesNothingBehind) {
  const std::string state = lab().Env("LAB_STATE");
  const std::string netns_prefix = lab().Env("LAB_NETNS_PREFIX");
  const Result down = lab().Down(/*purge=*/false);
  ASSERT_EQ(down.status, 0) << down.out;

  std::istringstream netns(Shell("ip netns list").out);
  for (std::string line; std::getline(netns, line);) {
    EXPECT_NE(line.rfind(netns_prefix, 0), 0U) << "netns left: " << line;
  }
  std::istringstream links(Shell("ip -o link show").out);
  for (std::string line; std::getline(links, line);) {
    EXPECT_EQ(line.find(" " + lab().Env("LAB_BRIDGE") + ":"), std::string::npos) << line;
    EXPECT_EQ(line.find(" " + lab().Env("LAB_VETH_PREFIX")), std::string::npos) << line;
  }
  std::istringstream mounts(ReadFile("/proc/mounts"));
  for (std::string line; std::getline(mounts, line);) {
    EXPECT_EQ(line.find(state + "/"), std::string::npos) << "mount left: " << line;
    EXPECT_EQ(line.find("/" + netns_prefix), std::string::npos) << "mount left: " << line;
  }
  // No process in the lab's cgroup or naming its state dir.
  const std::string cgroup_mark = "/gpuctl-lab/" + lab().name() + "/";
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    EXPECT_EQ(ReadFile(entry.path() / "cgroup").find(cgroup_mark), std::string::npos)
        << "process " << pid << " left in the lab's cgroup";
    std::string cmdline = ReadFile(entry.path() / "cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    EXPECT_EQ(cmdline.find(state + "/"), std::string::npos) << "process left: " << cmdline;
  }
  EXPECT_FALSE(fs::exists(lab().Env("LAB_CGROUP"))) << "cgroup left";
  // The node disks stay until --purge.
  EXPECT_TRUE(fs::exists(fs::path(state) / "nodes/worker1/upper"));
  EXPECT_EQ(lab().Down(/*purge=*/true).status, 0);
  EXPECT_FALSE(fs::exists(state));
}

}  // namespace
}  // namespace gpuctl
