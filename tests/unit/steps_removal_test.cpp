// The removal steps of a node leaving the cluster (state: absent;
// docs/day2.md, "Removing a node"): nfs.leave, k8s.leave, k8s.forget-nodes
// and slurm.leave, with systemctl, findmnt and kubectl answering as the real
// tools do (kubectl's NotFound text as the lab's apiserver and a real one
// print it).
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

bool RemovalHas(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A worker leaving each kind of cluster: worker2 has state: absent.
std::string RemovalInventory(const std::string& orchestrator) {
  return "cluster: t\norchestrator: " + orchestrator +
         "\nnetwork: {subnet: 198.18.241.0/24}\n"
         "nfs: {server: s, exports: [{path: /data/shared}], mounts: [{export: /data/shared, "
         "path: /data/shared}]}\n"
         "nodes:\n"
         "  - {name: m, address: 198.18.241.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - {name: worker1, address: 198.18.241.11, os: ubuntu-22.04, roles: [worker]}\n"
         "  - {name: worker2, address: 198.18.241.12, os: rocky-9, roles: [worker], "
         "state: absent}\n"
         "  - {name: s, address: 198.18.241.13, os: ubuntu-22.04, roles: [storage]}\n";
}

// systemctl answering is-active --quiet and is-enabled --quiet for every
// unit alike, with the exit statuses systemctl uses (3: inactive, 1:
// disabled).
void Units(StepHarness& h, bool active, bool enabled) {
  h.Stub("systemctl", std::string("case \"$1\" in\n") + "  is-active) exit " +
                          (active ? "0" : "3") + " ;;\n  is-enabled) exit " +
                          (enabled ? "0" : "1") + " ;;\n  *) exit 0 ;;\nesac");
}

TEST(RemovalSteps, SlurmLeaveWantsSlurmdStoppedAndDisabled) {
  StepHarness running(RemovalInventory("slurm"));
  Units(running, true, true);
  auto run = running.Probe("slurm.leave", "worker2");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "slurmd is running\n");

  StepHarness enabled(RemovalInventory("slurm"));
  Units(enabled, false, true);
  run = enabled.Probe("slurm.leave", "worker2");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "slurmd is enabled at boot\n");

  StepHarness gone(RemovalInventory("slurm"));
  Units(gone, false, false);
  run = gone.Probe("slurm.leave", "worker2");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(RemovalSteps, NfsLeaveWantsTheMountGoneAndTheFstabBlockRemoved) {
  StepHarness mounted(RemovalInventory("slurm"));
  mounted.StubFixture("findmnt", "findmnt/lab-nfs-bind.txt");
  auto run = mounted.Probe("nfs.leave", "worker2");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "/data/shared is still mounted\n");

  StepHarness unmounted(RemovalInventory("slurm"));
  unmounted.StubOutput("findmnt", "", 1);
  run = unmounted.Probe("nfs.leave", "worker2");
  EXPECT_EQ(run.status, 0) << run.out;

  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  // The admin's own line stays; gpuctl's block is what counts.
  StepHarness listed(RemovalInventory("slurm"));
  listed.StubOutput("findmnt", "", 1);
  listed.File("/etc/fstab",
              "UUID=1234 / ext4 defaults 0 1\n# BEGIN gpuctl\n198.18.241.13:/data/shared "
              "/data/shared nfs rw,hard,nfsvers=4.1 0 0\n# END gpuctl\n");
  run = listed.Probe("nfs.leave", "worker2");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "/etc/fstab still holds gpuctl's NFS mounts\n");
}

TEST(RemovalSteps, K8sLeaveWantsKubeletStoppedAndTheNodeReset) {
  StepHarness running(RemovalInventory("kubernetes"));
  Units(running, true, true);
  auto run = running.Probe("k8s.leave", "worker2");
  if (RemovalHas(run.out, "is still there")) GTEST_SKIP() << "this machine is joined to a cluster";
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "kubelet is running\n");

  StepHarness enabled(RemovalInventory("kubernetes"));
  Units(enabled, false, true);
  run = enabled.Probe("k8s.leave", "worker2");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "kubelet is enabled at boot\n");

  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness joined(RemovalInventory("kubernetes"));
  Units(joined, false, false);
  joined.File("/etc/kubernetes/kubelet.conf", "apiVersion: v1\nkind: Config\n");
  run = joined.Probe("k8s.leave", "worker2");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "/etc/kubernetes/kubelet.conf is still there (joined to a cluster)\n");

  StepHarness cni(RemovalInventory("kubernetes"));
  Units(cni, false, false);
  cni.File("/etc/cni/net.d/10-flannel.conflist", "{}\n");
  run = cni.Probe("k8s.leave", "worker2");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "/etc/cni/net.d still holds the cluster's CNI configuration\n");
}

TEST(RemovalSteps, K8sForgetNodesDeletesOnlyWhatTheClusterStillHas) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  // kubectl get node NAME -o name: found, NotFound (status 1), or no answer.
  const auto with_kubectl = [](const std::string& get_node) {
    auto h = std::make_unique<StepHarness>(RemovalInventory("kubernetes"));
    h->File("/etc/kubernetes/admin.conf", "apiVersion: v1\nkind: Config\n");
    h->Stub("kubectl", get_node);
    return h;
  };
  auto still = with_kubectl("echo node/worker2");
  auto run = still->Probe("k8s.forget-nodes", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "still in the cluster: worker2\n");

  auto gone =
      with_kubectl("echo 'Error from server (NotFound): nodes \"worker2\" not found' >&2; exit 1");
  run = gone->Probe("k8s.forget-nodes", "m");
  EXPECT_EQ(run.status, 0) << run.out;

  auto down = with_kubectl(
      "echo 'The connection to the server 198.18.241.10:6443 was refused - did you specify the "
      "right host or port?' >&2; exit 1");
  run = down->Probe("k8s.forget-nodes", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(RemovalHas(run.out,
                         "kubectl get node worker2 fails: The connection to the server "
                         "198.18.241.10:6443 was refused"))
      << run.out;
}

TEST(RemovalSteps, KnownHostsForgetsALeavingNodesKey) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(RemovalInventory("slurm"));
  h.StubOutput("ssh-keyscan", "", 99);  // every key is known: a scan is a bug
  std::string keys;
  std::string known;
  for (const auto& node : h.inventory().nodes) {
    const std::string key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyOf" + node.name;
    if (!node.absent) keys += node.name + " " + node.address + " " + key + "\n";
    known += node.name + "," + node.address + " " + key + "\n";
  }
  h.SetEnv("GPUCTL_SSH_HOST_KEYS", keys);
  h.File("/root/.ssh/known_hosts", known);
  auto run = h.Probe("os.ssh-known-hosts", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "/root/.ssh/known_hosts still trusts the host key of leaving node: worker2\n");

  // Without its line, nothing is left to forget.
  std::string kept;
  for (const std::string& line : {std::string("m,"), std::string("worker1,"), std::string("s,")}) {
    const auto at = known.find(line);
    kept += known.substr(at, known.find('\n', at) + 1 - at);
  }
  h.File("/root/.ssh/known_hosts", kept);
  run = h.Probe("os.ssh-known-hosts", "m");
  EXPECT_EQ(run.status, 0) << run.out;
}

}  // namespace
}  // namespace gpuctl
