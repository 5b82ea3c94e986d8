// The OS steps' probes (playbooks/05-os-identity.yaml, 10-os.yaml, the SSH
// key steps of 15-os-services.yaml, the nouveau blacklist and the CUDA
// profile of 20-gpu.yaml, validate.tools) against node files and tool output:
// files are faked in a private mount namespace (root only), tools stubbed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::Slurp;
using testing::StepHarness;

constexpr const char* kOsInventory = R"(cluster: t
versions: {driver_branch: "550", cuda: "12.4"}
nodes:
  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: worker1
    address: 198.18.0.11
    ib_address: 10.10.0.11
    os: rocky-9
    roles: [worker]
    hardware:
      gpus: {model: "NVIDIA H100 80GB HBM3", count: 8}
      ib: [{device: mlx5_0, port: 1, rate: 400}]
)";

std::string Read(const std::string& fixture) { return Slurp(StepHarness::Fixture(fixture)); }

class OsStepsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  }
  StepHarness h{kOsInventory};
};

TEST_F(OsStepsTest, HostnameNeedsTheLiveNameAndTheFile) {
  h.StubOutput("uname", "worker1\n");
  h.File("/etc/hostname", "worker1\n");
  EXPECT_EQ(h.Probe("os.hostname", "worker1").status, 0);
  h.File("/etc/hostname", "localhost\n");
  const auto run = h.Probe("os.hostname", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("/etc/hostname has 'localhost' (want 'worker1')"), std::string::npos)
      << run.out;
}

TEST_F(OsStepsTest, HostsBlockIsComparedAndUnmatchedMarkersAreNamed) {
  const std::string block =
      "# BEGIN gpuctl\n198.18.0.10 master1\n198.18.0.11 worker1\n10.10.0.11 worker1-ib\n"
      "# END gpuctl\n";
  h.File("/etc/hosts", "127.0.0.1 localhost\n" + block + "192.0.2.7 admin-added\n");
  EXPECT_EQ(h.Probe("os.hosts", "worker1").status, 0);
  h.File("/etc/hosts", "127.0.0.1 localhost\n");
  EXPECT_NE(h.Probe("os.hosts", "worker1").out.find("has no gpuctl block"), std::string::npos);
  h.File("/etc/hosts", "# BEGIN gpuctl\n198.18.0.10 master1\n");
  const auto run = h.Probe("os.hosts", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("1 '# BEGIN gpuctl' and 0 '# END gpuctl' lines"), std::string::npos)
      << run.out;
}

TEST_F(OsStepsTest, DefaultTargetComesFromSystemctl) {
  h.StubOutput("systemctl", "graphical.target\n");  // this machine's own answer
  const auto run = h.Probe("os.multi-user-target", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("default target is 'graphical.target'"), std::string::npos) << run.out;
  h.StubOutput("systemctl", "multi-user.target\n");
  EXPECT_EQ(h.Probe("os.multi-user-target", "master1").status, 0);
}

TEST_F(OsStepsTest, ModulesFileMustListBoth) {
  h.File("/etc/modules-load.d/gpuctl-k8s.conf", "overlay\nbr_netfilter\n");
  EXPECT_EQ(h.Probe("os.modules", "worker1").status, 0);
  h.File("/etc/modules-load.d/gpuctl-k8s.conf", "overlay\n");
  EXPECT_EQ(h.Probe("os.modules", "worker1").status, 1);
}

TEST_F(OsStepsTest, KnownHostsComparesWithTheKeysGpuctlVerifiedWithoutScanning) {
  // Every node's key as gpuctl's connections saw it: nothing to scan, so a
  // keyscan here would be a bug (it fails loudly).
  h.StubOutput("ssh-keyscan", "", 99);
  std::string keys;
  std::string known;
  for (const auto& node : h.inventory().nodes) {
    const std::string key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyOf" + node.name;
    keys += node.name + " " + node.address + " " + key + "\n";
    known += node.name + "," + node.address + " " + key + "\n";
  }
  h.SetEnv("GPUCTL_SSH_HOST_KEYS", keys);
  h.File("/root/.ssh/known_hosts", "# kept\n" + known);
  const auto ok = h.Probe("os.ssh-known-hosts", "master1");
  EXPECT_EQ(ok.status, 0) << ok.out;
  // One node reinstalled: its key moved; only it is named.
  h.File("/root/.ssh/known_hosts", known.substr(0, known.find("KeyOfmaster1")) + "KeyOfOldMaster1" +
                                       known.substr(known.find("KeyOfmaster1") + 12));
  const auto stale = h.Probe("os.ssh-known-hosts", "master1");
  EXPECT_EQ(stale.status, 1);
  EXPECT_NE(stale.out.find("lacks the current host key of: master1\n"), std::string::npos)
      << stale.out;
}

TEST_F(OsStepsTest, KnownHostsVerificationLogsInToEveryNodeOnlyAfterTheChange) {
  const std::string log = (h.dir() / "ssh.log").string();
  h.StubSshLogins(log, "worker1");
  // On its own (after the change): a login to each node by its name, never
  // by its -ib name (worker1-ib is the same host on the fabric).
  const auto verify = h.Verify("os.ssh-known-hosts", "master1");
  EXPECT_EQ(verify.status, 1);
  EXPECT_EQ(
      verify.out,
      "ssh from the master fails to: worker1 (root@worker1: Permission denied (publickey).)\n");
  EXPECT_EQ(testing::SortedLines(Slurp(log)), "master1\nworker1\n");
  // In a batch (plan, check): the probe's key comparison stands, and the
  // master logs in nowhere; a login per node on every check is check --deep's.
  std::filesystem::remove(log);
  const auto batch = h.Script("gpuctl_gather_facts \"$GPUCTL_OS_FAMILY\"\n(\n" +
                                  h.VerifyScript("os.ssh-known-hosts") + "\n)",
                              "os.ssh-known-hosts", "master1");
  EXPECT_EQ(batch.status, 0) << batch.out;
  EXPECT_FALSE(std::filesystem::exists(log)) << Slurp(log);
}

TEST_F(OsStepsTest, KnownHostsNeedsEveryNodesCurrentKey) {
  // ssh-keyscan's real line format; the nodes answer with keys the master's
  // known_hosts does not hold yet.
  h.StubOutput("ssh-keyscan",
               "198.18.0.10 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyOfMaster\n"
               "198.18.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyOfWorker\n");
  h.File("/root/.ssh/known_hosts", "");
  const auto run = h.Probe("os.ssh-known-hosts", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("lacks the current host key of: master1 worker1\n"), std::string::npos)
      << run.out;
}

// Nodes gpuctl did not reach are scanned with one ssh-keyscan for all of
// them (it asks its hosts at once, one timeout for all), never one a node:
// in series, each node that is down cost 5 s.
TEST_F(OsStepsTest, KnownHostsScansTheNodesGpuctlDidNotReachInOneKeyscan) {
  const std::string log = (h.dir() / "keyscan.log").string();
  // worker1 answers; master1 does not (no line for it).
  h.Stub("ssh-keyscan",
         "echo \"$*\" >>" + log +
             "\necho '198.18.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyOfWorker'");
  h.File("/root/.ssh/known_hosts", "");
  const auto run = h.Probe("os.ssh-known-hosts", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "no host key from: master1 (198.18.0.10) (not reached by gpuctl, no answer to "
            "ssh-keyscan)\n");
  EXPECT_EQ(Slurp(log), "-T 5 -t ed25519 198.18.0.10 198.18.0.11\n");
}

TEST_F(OsStepsTest, SwapCountsActiveDevicesAndFstabLines) {
  h.File("/proc/swaps", Read("proc/swaps-none.txt"));
  h.File("/etc/fstab", "UUID=abc / ext4 defaults 0 1\n# /swap.img none swap sw 0 0\n");
  EXPECT_EQ(h.Probe("os.swap-off", "worker1").status, 0);
  h.File("/proc/swaps", Read("proc/swaps-one.txt"));
  h.File("/etc/fstab", "UUID=abc / ext4 defaults 0 1\n/swap.img none swap sw 0 0\n");
  const auto run = h.Probe("os.swap-off", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("1 swap device(s) active, 1 swap line(s) in /etc/fstab"),
            std::string::npos)
      << run.out;
}

TEST_F(OsStepsTest, NouveauBlacklistNeedsBothLines) {
  h.File("/etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n");
  const auto run = h.Probe("gpu.nouveau-blacklist", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("blacklist-nouveau.conf is missing or differs"), std::string::npos);
  h.File("/etc/modprobe.d/blacklist-nouveau.conf",
         "blacklist nouveau\noptions nouveau modeset=0\n");
  EXPECT_EQ(h.Probe("gpu.nouveau-blacklist", "worker1").status, 0);
}

TEST_F(OsStepsTest, CudaToolkitNeedsThePackageAndTheLoginProfile) {
  // rpm -q answers for the Rocky worker: installed.
  h.StubOutput("rpm", "");
  h.File(
      "/etc/profile.d/cuda.sh",
      "export PATH=/usr/local/cuda-12.4/bin${PATH:+:$PATH}\n"
      "export LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n");
  EXPECT_EQ(h.Probe("cuda.toolkit", "worker1").status, 0);
  h.File("/etc/profile.d/cuda.sh", "export PATH=/usr/local/cuda-12.3/bin:$PATH\n");
  EXPECT_NE(h.Probe("cuda.toolkit", "worker1").out.find("/etc/profile.d/cuda.sh is missing"),
            std::string::npos);
  h.StubOutput("rpm", "", 1);
  EXPECT_NE(h.Probe("cuda.toolkit", "worker1").out.find("cuda-toolkit-12-4 is not installed"),
            std::string::npos);
}

TEST_F(OsStepsTest, SshKeygenWantsAMatchingPublicKey) {
  const auto key = h.dir() / "key";
  ASSERT_EQ(
      std::system(("ssh-keygen -q -t ed25519 -N '' -C root@master1 -f " + key.string()).c_str()),
      0);
  h.File("/root/.ssh/id_ed25519", Slurp(key.string()), std::filesystem::perms(0600));
  h.File("/root/.ssh/id_ed25519.pub", Slurp(key.string() + ".pub"));
  EXPECT_EQ(h.Probe("os.ssh-keygen", "master1").status, 0);
  h.File("/root/.ssh/id_ed25519.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOther root@x\n");
  const auto run = h.Probe("os.ssh-keygen", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("is not /root/.ssh/id_ed25519's public key"), std::string::npos)
      << run.out;
}

TEST_F(OsStepsTest, SshKeysFindsTheMastersKeyBesideTheAdminsAndOptions) {
  const std::string master = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMasterKeyMasterKey root@master1";
  h.SetEnv("GPUCTL_MASTER_PUBKEY", master);
  h.File("/root/.ssh/authorized_keys",
         "ssh-rsa AAAAB3NzaC1yc2EAdminKey admin@laptop\n"
         "from=\"198.18.0.0/24\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMasterKeyMasterKey old\n");
  EXPECT_EQ(h.Probe("os.ssh-keys", "worker1").status, 0);
  h.File("/root/.ssh/authorized_keys", "ssh-rsa AAAAB3NzaC1yc2EAdminKey admin@laptop\n");
  const auto run = h.Probe("os.ssh-keys", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("lacks the master's key"), std::string::npos) << run.out;
}

TEST(ValidateToolsStep, WantsWhatTheNodeRuns) {
  StepHarness h{kOsInventory};
  // dpkg-query on the Ubuntu master: nothing installed; it needs only MPI.
  h.StubOutput("dpkg-query", "", 1);
  auto run = h.Probe("validate.tools", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("not installed: openmpi-bin"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("nccl-tests"), std::string::npos) << run.out;
  // The Rocky GPU worker with an IB port needs all three, by their rpm names.
  h.StubOutput("rpm", "", 1);
  run = h.Probe("validate.tools", "worker1");
  EXPECT_NE(run.out.find("not installed: openmpi nccl-tests perftest"), std::string::npos)
      << run.out;
  h.StubOutput("rpm", "");
  EXPECT_EQ(h.Probe("validate.tools", "worker1").status, 0);
}

}  // namespace
}  // namespace gpuctl
