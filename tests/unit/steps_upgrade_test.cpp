// A Kubernetes minor upgrade (playbooks/60-kubernetes.yaml, docs/day2.md):
// k8s.upgrade, k8s.upgrade-node and the skew guard of k8s.packages, with
// the API server's /version in kube-apiserver's format (version.Info,
// indented, as `kubectl get --raw /version` prints it) and dpkg answering
// per package.
#include <fstream>

#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

// master1 and worker1 (Ubuntu) at `kubernetes` (versions.kubernetes).
std::string UpgradeInventory(const std::string& kubernetes) {
  return "cluster: t\nversions: {kubernetes: \"" + kubernetes +
         "\"}\nnodes:\n"
         "  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - {name: worker1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}\n";
}

// What the API server's /version says for `version` ("1.30.6").
std::string VersionJson(const std::string& version) {
  const std::string minor = version.substr(2, version.rfind('.') - 2);
  return "{\n  \"major\": \"1\",\n  \"minor\": \"" + minor + "\",\n  \"gitVersion\": \"v" +
         version +
         "\",\n  \"gitCommit\": \"0000000000000000000000000000000000000000\",\n"
         "  \"gitTreeState\": \"clean\",\n  \"buildDate\": \"2024-10-22T20:33:38Z\",\n"
         "  \"goVersion\": \"go1.22.8\",\n  \"compiler\": \"gc\",\n"
         "  \"platform\": \"linux/amd64\"\n}\n";
}

// A harness whose node is in a cluster running `cluster` (its kubeconfig
// `conf` exists, kubectl answers /version), with kubelet at `kubelet`.
std::unique_ptr<StepHarness> InCluster(const std::string& want, const std::string& cluster,
                                       const std::string& conf, const std::string& kubelet) {
  auto h = std::make_unique<StepHarness>(UpgradeInventory(want));
  h->File(conf, "apiVersion: v1\nkind: Config\n");
  h->StubOutput("kubectl", VersionJson(cluster));
  h->Stub("dpkg-query", "shift 2\nfor p in \"$@\"; do\n  case \"$p\" in\n    kubelet) echo " +
                            kubelet + " ;;\n    *) echo 1.30.6-1.1 ;;\n  esac\ndone");
  h->StubOutput("systemctl", "", 0);
  return h;
}

TEST(UpgradeSteps, WithoutAClusterThereIsNothingToUpgrade) {
  StepHarness h(UpgradeInventory("1.31"));
  const auto run = h.Probe("k8s.upgrade", "master1");
  if (run.status != 0 && run.out.find("control plane") != std::string::npos) {
    GTEST_SKIP() << "this machine runs a Kubernetes control plane";
  }
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(UpgradeSteps, TheControlPlaneMovesOneMinorAtATime) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  const std::string admin = "/etc/kubernetes/admin.conf";
  const std::string kubelet = "1.30.6-1.1";
  auto next = InCluster("1.31", "1.30.6", admin, kubelet);
  auto run = next->Probe("k8s.upgrade", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "the control plane runs v1.30.6 (want 1.31): kubeadm upgrade apply\n");

  auto skip = InCluster("1.31", "1.29.10", admin, kubelet);
  run = skip->Probe("k8s.upgrade", "master1");
  EXPECT_EQ(run.status, 4);
  EXPECT_EQ(run.out,
            "the control plane runs v1.29.10: kubeadm upgrades one minor at a time (set "
            "versions.kubernetes to 1.30, apply, then the next)\n");

  auto there = InCluster("1.31", "1.31.2", admin, kubelet);
  run = there->Probe("k8s.upgrade", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
  // An exact release pins the patch too.
  auto patch = InCluster("1.31.3", "1.31.2", admin, kubelet);
  run = patch->Probe("k8s.upgrade", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "the control plane runs v1.31.2 (want 1.31.3)\n");

  auto down = InCluster("1.30", "1.31.2", admin, kubelet);
  run = down->Probe("k8s.upgrade", "master1");
  EXPECT_EQ(run.status, 4);
  EXPECT_EQ(run.out,
            "the control plane runs v1.31.2, newer than 1.30: kubeadm does not downgrade (set "
            "versions.kubernetes to 1.31)\n");
}

TEST(UpgradeSteps, AWorkerFollowsOnlyOnceTheControlPlaneHasMoved) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  const std::string conf = "/etc/kubernetes/kubelet.conf";
  // The control plane is still at 1.30: known once k8s.upgrade has run.
  auto waiting = InCluster("1.31", "1.30.6", conf, "1.30.6-1.1");
  auto run = waiting->Probe("k8s.upgrade-node", "worker1");
  EXPECT_EQ(run.status, 3);
  EXPECT_EQ(run.out,
            "kubelet 1.30.6-1.1 (want 1.31); the control plane runs v1.30.6: this node follows "
            "once it is upgraded\n");
  auto ready = InCluster("1.31", "1.31.2", conf, "1.30.6-1.1");
  run = ready->Probe("k8s.upgrade-node", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "kubelet 1.30.6-1.1 (want 1.31): kubeadm upgrade node, then the kubelet\n");
  auto done = InCluster("1.31", "1.31.2", conf, "1.31.2-1.1");
  run = done->Probe("k8s.upgrade-node", "worker1");
  EXPECT_EQ(run.status, 0) << run.out;
  // A control plane two minors behind: not until it has moved, one at a time.
  auto skip = InCluster("1.32", "1.30.6", conf, "1.30.6-1.1");
  run = skip->Probe("k8s.upgrade-node", "worker1");
  EXPECT_EQ(run.status, 4);
  EXPECT_NE(run.out.find("more than one minor behind 1.32"), std::string::npos) << run.out;
}

TEST(UpgradeSteps, TheKubeletIsNeverNewerThanItsControlPlane) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  const std::string conf = "/etc/kubernetes/kubelet.conf";
  auto waiting = InCluster("1.31", "1.30.6", conf, "1.30.6-1.1");
  auto run = waiting->Probe("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 3);
  EXPECT_EQ(run.out,
            "kubeadm 1.30.6-1.1 is installed (want 1.31); the control plane runs v1.30.6: this "
            "node follows once it is upgraded\n");
  // The change refuses as the probe does, before installing anything.
  waiting->Stub("apt-get", "echo apt-get ran; exit 1");
  run = waiting->Change("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "gpuctl: the control plane runs v1.30.6: this node follows once it is upgraded\n");
}

}  // namespace
}  // namespace gpuctl
