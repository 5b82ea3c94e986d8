// The Kubernetes steps' probes and verifications (playbooks/60-kubernetes.yaml)
// read kubectl, helm and dpkg the way the real tools answer: jsonpath output
// rendered by a real kubectl 1.30 (tests/fixtures/kubectl/), helm's JSON
// (tests/fixtures/helm/), and the Google Cloud SDK kubectl this host's dpkg
// database holds.
#include <algorithm>
#include <chrono>
#include <fstream>

#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::Slurp;
using testing::StepHarness;

// master1, worker1 and worker2 as in the fixtures; worker2's GPU count and the
// pod CIDR vary per test.
std::string KubernetesInventory(int worker2_gpus = 8,
                                const std::string& pod_cidr = "10.244.0.0/16") {
  return "cluster: t\nnetwork: {pod_cidr: \"" + pod_cidr +
         "\"}\nnodes:\n"
         "  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: worker1\n    address: 198.18.0.11\n    os: ubuntu-22.04\n"
         "    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA A100-SXM4-80GB\", count: 8}}\n"
         "  - name: worker2\n    address: 198.18.0.12\n    os: ubuntu-22.04\n"
         "    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA A100-SXM4-80GB\", count: " +
         std::to_string(worker2_gpus) + "}}\n";
}

bool KubernetesHas(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---------------------------------------------------------------- k8s.packages

// A package in the stubbed database: its version (pkg_version) and its
// selection/status words (the hold check).
void Package(StepHarness& h, const std::string& name, const std::string& version,
             const std::string& status) {
  std::ofstream(h.dir() / ("version-" + name)) << version;
  std::ofstream(h.dir() / ("status-" + name)) << status;
}

// dpkg's file list of `package`, written now (after the files it lists).
void Owns(StepHarness& h, const std::string& package, const std::string& file) {
  h.File("/var/lib/dpkg/info/" + package + ".list", "/.\n/usr\n" + file + "\n");
}

// dpkg-query answering per package from what Package() wrote.
void StubPackageDatabase(StepHarness& h) {
  h.Stub("dpkg-query",
         "f=$2; shift 2\nfor p in \"$@\"; do\n"
         "  case \"$f\" in\n"
         "    *Status*) printf '%s %s\\n' \"$p\" \"$(cat \"" +
             h.dir().string() + "/status-$p\")\" ;;\n" + "    *) cat \"" + h.dir().string() +
             "/version-$p\" ;;\n  esac\ndone");
}

class PackagesTest : public ::testing::Test {
 protected:
  PackagesTest() : h_(KubernetesInventory()) {
    StubPackageDatabase(h_);
    for (const char* p : {"kubeadm", "kubelet", "kubectl"}) {
      Package(p, "1.30.6-1.1", "hold ok installed");
      // The tools PATH finds first (the harness's bin), each listed in its
      // package's dpkg file list, which dpkg wrote after unpacking them.
      h_.StubOutput(p, "");
      Owns(p, (h_.dir() / "bin" / p).string());
    }
    h_.StubOutput("systemctl", "", 0);
  }
  void SetUp() override {
    if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  }
  void Package(const std::string& name, const std::string& version, const std::string& status) {
    gpuctl::Package(h_, name, version, status);
  }
  void Owns(const std::string& package, const std::string& file) {
    gpuctl::Owns(h_, package, file);
  }
  StepHarness h_;
};

TEST_F(PackagesTest, PassesWhenPinnedHeldOnPathAndEnabled) {
  const auto run = h_.Probe("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(PackagesTest, TheCloudSdkKubectlIsInstalledButNotTheWantedVersion) {
  // The host's dpkg database (inherited by Ubuntu-like lab nodes) has Google
  // Cloud SDK's kubectl: "installed" must not count.
  Package("kubectl", "", "install ok installed");
  std::filesystem::copy_file(StepHarness::Fixture("kubectl/dpkg-version-kubectl-gcloud-sdk.txt"),
                             h_.dir() / "version-kubectl",
                             std::filesystem::copy_options::overwrite_existing);
  const auto run = h_.Probe("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "kubectl 1:528.0.0-0 is installed (want 1.30)")) << run.out;
}

TEST_F(PackagesTest, NamesPackagesThatAreNotHeld) {
  Package("kubelet", "1.30.6-1.1", "install ok installed");
  const auto run = h_.Probe("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "not held against upgrades: kubelet")) << run.out;
}

TEST_F(PackagesTest, AMissingPackageIsNamed) {
  Package("kubeadm", "", "");
  const auto run = h_.Probe("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "kubeadm is not installed (want 1.30)")) << run.out;
}

TEST_F(PackagesTest, TheKubectlOnPathMustBeThePackagesFile) {
  // The packages are right, but PATH finds another kubectl first (the SDK's
  // dispatcher): the package's file is /usr/bin/kubectl.
  Owns("kubectl", "/usr/bin/kubectl");
  const auto run = h_.Probe("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "kubectl on PATH is " + (h_.dir() / "bin/kubectl").string() +
                         ", not the kubectl package's file\n");
}

TEST_F(PackagesTest, AToolCopiedOverThePackagesFileIsNamed) {
  // Written after dpkg recorded the package: someone's own kubelet.
  const auto kubelet = h_.dir() / "bin/kubelet";
  std::filesystem::last_write_time(
      kubelet, std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  const auto run = h_.Probe("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, kubelet.string() +
                         " was changed after the kubelet package installed it (newer than "
                         "dpkg's file list)\n");
}

TEST_F(PackagesTest, KubeletMustBeEnabled) {
  h_.StubOutput("systemctl", "", 1);
  const auto run = h_.Probe("k8s.packages", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "kubelet.service is not enabled")) << run.out;
}

// ---------------------------------------------------------------- k8s.cni

// kubectl answering the DaemonSet lookup and the ConfigMap's net-conf.json.
void StubFlannel(StepHarness& h, const std::string& net_conf_fixture, bool daemonset = true) {
  h.Stub("kubectl", std::string("case \"$*\" in\n") + "  *daemonset*) " +
                        (daemonset ? "echo daemonset.apps/kube-flannel-ds ;;\n"
                                   : "echo 'Error from server (NotFound): daemonsets.apps "
                                     "\"kube-flannel-ds\" not found' >&2; exit 1 ;;\n") +
                        "  *configmap*) cat '" + StepHarness::Fixture(net_conf_fixture) +
                        "' ;;\n  *) exit 1 ;;\nesac");
}

TEST(CniStep, ProbeReadsTheNetworkFromFlannelsNetConf) {
  StepHarness h(KubernetesInventory());
  StubFlannel(h, "kubectl/flannel-net-conf.txt");
  const auto run = h.Probe("k8s.cni", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(CniStep, ProbeNamesAnotherPodCidr) {
  StepHarness h(KubernetesInventory(8, "10.32.0.0/16"));
  StubFlannel(h, "kubectl/flannel-net-conf.txt");
  auto run = h.Probe("k8s.cni", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(
      KubernetesHas(run.out, "net-conf.json has Network '10.244.0.0/16' (want 10.32.0.0/16)"))
      << run.out;
  StubFlannel(h, "kubectl/flannel-net-conf-10.32.txt");
  run = h.Probe("k8s.cni", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(CniStep, ProbeSaysFlannelIsNotApplied) {
  StepHarness h(KubernetesInventory());
  StubFlannel(h, "kubectl/flannel-net-conf.txt", /*daemonset=*/false);
  const auto run = h.Probe("k8s.cni", "master1");
  if (std::filesystem::exists("/etc/kubernetes/admin.conf")) {
    EXPECT_EQ(run.status, 1);
    EXPECT_TRUE(KubernetesHas(run.out, "flannel is not applied: Error from server (NotFound)"))
        << run.out;
  } else {
    // No cluster on this host: known after k8s.init has run.
    EXPECT_EQ(run.status, 3) << run.out;
  }
}

// kubectl for versions.cni: calico. `running` lists the CNI DaemonSets that
// exist ("calico-node", "kube-flannel-ds"); `pool` is the default IPv4
// pool's CIDR as `-o jsonpath='{.spec.cidr}'` prints it ("" : no pool yet).
void StubCalico(StepHarness& h, const std::string& running, const std::string& pool) {
  h.SetEnv("STUB_RUNNING", running);
  h.SetEnv("STUB_POOL", pool);
  h.Stub(
      "kubectl",
      "case \"$*\" in\n"
      "  *ippools*) [ -n \"$STUB_POOL\" ] || { echo 'Error from server (NotFound): "
      "ippools.crd.projectcalico.org \"default-ipv4-ippool\" not found' >&2; exit 1; }\n"
      "    printf '%s' \"$STUB_POOL\" ;;\n"
      "  *daemonset*) for ds in calico-node kube-flannel-ds; do\n"
      "      case \"$* \" in *\" $ds \"*)\n"
      "        case \" $STUB_RUNNING \" in *\" $ds \"*) echo daemonset.apps/$ds; exit 0 ;; esac\n"
      "        echo \"Error from server (NotFound): daemonsets.apps \\\"$ds\\\" not found\" >&2; "
      "exit 1 ;;\n"
      "      esac\n"
      "    done ;;\n"
      "  *) exit 1 ;;\n"
      "esac");
}

std::string CalicoInventory(const std::string& pod_cidr = "10.244.0.0/16") {
  return KubernetesInventory(8, pod_cidr) + "versions: {cni: calico}\n";
}

// k8s.cni's probe on master1 for versions.cni: calico and `pod_cidr`.
testing::StepRun CalicoProbe(const std::string& pod_cidr, const std::string& pool) {
  StepHarness h(CalicoInventory(pod_cidr));
  StubCalico(h, "calico-node", pool);
  return h.Probe("k8s.cni", "master1");
}

TEST(CniStep, CalicoIsDoneWhenItsDefaultPoolIsThePodCidr) {
  const auto run = CalicoProbe("10.244.0.0/16", "10.244.0.0/16");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(CniStep, CalicoKeepsThePoolItMadeAndTheProbeSaysSo) {
  const auto run = CalicoProbe("10.32.0.0/16", "10.244.0.0/16");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "Calico's default IPv4 pool is 10.244.0.0/16, the inventory's pod CIDR is "
            "10.32.0.0/16: Calico keeps the pool it made at install (change it with calicoctl, "
            "or reset the cluster)\n");
  // No pool at all: calico-node has not started anywhere yet.
  const auto none = CalicoProbe("10.244.0.0/16", "");
  EXPECT_EQ(none.status, 1);
  EXPECT_TRUE(KubernetesHas(none.out, "Calico has no default IPv4 pool yet (default-ipv4-ippool)"))
      << none.out;
}

// k8s.cni's probe on a master with a cluster (admin.conf there), the
// inventory's `inventory`, the CNI DaemonSets `running`.
testing::StepRun ProbeWithCluster(const std::string& inventory, const std::string& running) {
  StepHarness h(inventory);
  h.File("/etc/kubernetes/admin.conf", "apiVersion: v1\nkind: Config\n",
         std::filesystem::perms(0600));
  StubCalico(h, running, running == "calico-node" ? "10.244.0.0/16" : "");
  return h.Probe("k8s.cni", "master1");
}

TEST(CniStep, ARunningClusterIsNotMovedToTheOtherCni) {
  if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  struct Case {
    std::string inventory, running;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {CalicoInventory(), "kube-flannel-ds", 2,
       "gpuctl: flannel runs this cluster's pod network and versions.cni says calico: gpuctl "
       "does not move a running cluster to another CNI"},
      {KubernetesInventory(), "calico-node", 2,
       "gpuctl: Calico runs this cluster's pod network and versions.cni says flannel"},
      // Nothing running yet: Calico is simply not applied.
      {CalicoInventory(), "", 1,
       "Calico is not applied: Error from server (NotFound): daemonsets.apps \"calico-node\" "
       "not found"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    const auto run = ProbeWithCluster(c.inventory, c.running);
    EXPECT_EQ(run.status, c.status) << run.out;
    EXPECT_TRUE(KubernetesHas(run.out, c.says)) << run.out;
  }
}

// ---------------------------------------------------------------- k8s.nodes-ready

TEST(NodesReadyStep, AllInventoryNodesReady) {
  StepHarness h(KubernetesInventory());
  h.StubFixture("kubectl", "kubectl/ready-all-ready.txt");
  const auto run = h.Probe("k8s.nodes-ready", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(NodesReadyStep, NamesANodeWhoseKubeletStoppedPosting) {
  StepHarness h(KubernetesInventory());
  h.StubFixture("kubectl", "kubectl/ready-worker2-unknown.txt");
  const auto run = h.Probe("k8s.nodes-ready", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "1 of 3 nodes not Ready: worker2 (Ready=Unknown)")) << run.out;
}

TEST(NodesReadyStep, NamesANodeThatNeverRegistered) {
  StepHarness h(KubernetesInventory());
  h.StubFixture("kubectl", "kubectl/ready-worker2-missing.txt");
  const auto run = h.Probe("k8s.nodes-ready", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "1 of 3 nodes not Ready: worker2 (not registered)"))
      << run.out;
}

// The change waits for every node to register with one listing a round for
// the whole cluster, not a kubectl per node.
TEST(NodesReadyStep, ChangeListsTheClusterOnceARoundAndNamesWhoNeverRegistered) {
  StepHarness h(KubernetesInventory());
  const std::string log = (h.dir() / "kubectl.log").string();
  h.Stub("kubectl", "printf '%s\\n' \"$*\" >>" + log +
                        "\ncase \"$*\" in *\"get nodes\"*) printf 'master1\\nworker1\\n%s' "
                        "\"$STUB_MORE\" ;; esac");
  h.SetEnv("STUB_MORE", "worker2\n");
  const auto ready = h.Change("k8s.nodes-ready", "master1");
  EXPECT_EQ(ready.status, 0) << ready.out;
  const std::string calls = testing::Slurp(log);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), '\n'), 2) << calls;  // one list, one wait
  EXPECT_TRUE(KubernetesHas(calls,
                            "wait --for=condition=Ready --timeout=90s node master1 worker1 "
                            "worker2"))
      << calls;

  // worker2 never registers: 30 rounds (sleep stubbed), then its name.
  h.SetEnv("STUB_MORE", "");
  h.StubOutput("sleep", "");
  const auto missing = h.Change("k8s.nodes-ready", "master1");
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(KubernetesHas(missing.out, "gpuctl: not registered within 60 s: worker2\n"))
      << missing.out;
}

// ---------------------------------------------------------------- k8s.gpu-operator

class GpuOperatorTest : public ::testing::Test {
 protected:
  static void StubHelm(StepHarness& h, const std::string& list, const std::string& values) {
    h.Stub("helm", "case \"$*\" in\n  *list*) cat '" + StepHarness::Fixture(list) +
                       "' ;;\n  *values*) cat '" + StepHarness::Fixture(values) +
                       "' ;;\n  *) exit 1 ;;\nesac");
  }
  // The verification polls; its pauses cost nothing here.
  static void NoSleep(StepHarness& h) { h.Stub("sleep", "exit 0"); }
};

TEST_F(GpuOperatorTest, ProbeAcceptsTheDeployedReleaseWithHostDriverAndToolkit) {
  StepHarness h(KubernetesInventory());
  StubHelm(h, "helm/list-gpu-operator-deployed.json", "helm/values-host-driver-and-toolkit.json");
  const auto run = h.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(GpuOperatorTest, ProbeNamesWhatDiffers) {
  StepHarness h(KubernetesInventory());
  StubHelm(h, "helm/list-empty.json", "helm/values-host-driver-and-toolkit.json");
  auto run = h.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "release gpu-operator is not installed")) << run.out;

  StubHelm(h, "helm/list-gpu-operator-failed.json", "helm/values-host-driver-and-toolkit.json");
  run = h.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "release gpu-operator is not deployed: failed")) << run.out;

  StubHelm(h, "helm/list-gpu-operator-deployed.json", "helm/values-host-driver-only.json");
  run = h.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "does not set toolkit.enabled=false")) << run.out;
}

TEST_F(GpuOperatorTest, ProbeNamesAnotherChartVersion) {
  StepHarness h(
      "cluster: t\nversions: {gpu_operator: v24.9.0}\nnodes:\n"
      "  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n");
  StubHelm(h, "helm/list-gpu-operator-deployed.json", "helm/values-host-driver-and-toolkit.json");
  const auto run = h.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "runs chart gpu-operator-v24.3.0 (want gpu-operator-v24.9.0)"))
      << run.out;
}

TEST_F(GpuOperatorTest, VerifyPassesWhenEveryGpuNodeAdvertisesItsCount) {
  StepHarness h(KubernetesInventory());
  NoSleep(h);
  h.StubFixture("kubectl", "kubectl/gpu-all-ready.txt");
  const auto run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(GpuOperatorTest, OnlyApplyWaitsForTheDevicePluginToAdvertise) {
  // kubectl answers "no GPUs on worker2" twice, then every count: a device
  // plugin that starts after the change. CALLS counts the looks.
  const auto stub = [](StepHarness& h) {
    h.Stub("sleep", "exit 0");
    h.SetEnv("CALLS", (h.dir() / "calls").string());
    h.Stub("kubectl", "echo x >>\"$CALLS\"\nif [ \"$(wc -l <\"$CALLS\")\" -le 2 ]; then cat '" +
                          StepHarness::Fixture("kubectl/gpu-worker2-no-gpu.txt") + "'; else cat '" +
                          StepHarness::Fixture("kubectl/gpu-all-ready.txt") + "'; fi");
  };
  // Plan and check (no GPUCTL_SETTLE): one look, what is there now.
  StepHarness now(KubernetesInventory());
  stub(now);
  auto run = now.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "node worker2: allocatable nvidia.com/gpu is none (want 8)\n");
  EXPECT_EQ(Slurp(now.dir() / "calls"), "x\n");
  // Apply's verification after the change: it polls until they appear.
  StepHarness after(KubernetesInventory());
  stub(after);
  after.SetEnv("GPUCTL_SETTLE", "1");
  run = after.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(Slurp(after.dir() / "calls"), "x\nx\nx\n");
}

TEST_F(GpuOperatorTest, VerifyNamesTheFirstNodeThatDiffers) {
  StepHarness h(KubernetesInventory());
  NoSleep(h);
  h.StubFixture("kubectl", "kubectl/gpu-worker2-no-gpu.txt");
  auto run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "node worker2: allocatable nvidia.com/gpu is none (want 8)\n");

  h.StubFixture("kubectl", "kubectl/gpu-worker2-missing.txt");
  run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "node worker2 is not in the cluster (want nvidia.com/gpu 8)\n");
}

// The chart preflight: before the operator is installed or moved, the
// chart repository's index must list the inventory's version.
TEST_F(GpuOperatorTest, AVersionTheChartRepositoryLacksIsRefused) {
  const std::string index = StepHarness::Fixture("helm/index-gpu-operator.yaml");
  const auto at = [](const std::string& version) {
    return "cluster: t\nversions: {gpu_operator: " + version +
           "}\nnodes:\n"
           "  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n";
  };
  StepHarness missing(at("v24.3.1"));
  missing.Stub("curl", "case \"$*\" in *https://helm.ngc.nvidia.com/nvidia/index.yaml*) cat '" +
                           index + "' ;; *) exit 22 ;; esac");
  StubHelm(missing, "helm/list-empty.json", "helm/values-host-driver-and-toolkit.json");
  auto run = missing.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 5);
  EXPECT_EQ(run.out,
            "chart repository https://helm.ngc.nvidia.com/nvidia offers no gpu-operator v24.3.1 "
            "(it has v24.9.0, v24.6.2, v24.3.0, ...); set versions.gpu_operator to a version it "
            "has\n");
  // Before the cluster exists (helm cannot list): refused all the same.
  missing.Stub("helm", "exit 1");
  EXPECT_EQ(missing.Probe("k8s.gpu-operator", "master1").status, 5);
  // A repository that does not answer refuses nothing.
  missing.Stub("curl", "exit 7");
  EXPECT_EQ(missing.Probe("k8s.gpu-operator", "master1").status, 3);

  StepHarness offered(at("v24.3.0"));
  offered.Stub("curl", "cat '" + index + "'");
  StubHelm(offered, "helm/list-empty.json", "helm/values-host-driver-and-toolkit.json");
  run = offered.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "release gpu-operator is not installed in namespace gpu-operator\n");
}

// MIG (hardware.gpus.mig): GPU 0 of worker1 in seven 1g.10gb, GPU 1 whole,
// so the operator runs the mixed strategy and the verification counts
// each profile's resource beside nvidia.com/gpu.
constexpr const char* kMigInventory = R"(cluster: t
orchestrator: kubernetes
nodes:
  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: worker1
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
    hardware:
      gpus:
        model: NVIDIA H100 80GB HBM3
        count: 2
        mig: [{gpus: 0, instances: {1g.10gb: 7}}]
)";

TEST_F(GpuOperatorTest, MigLayoutsNeedTheirStrategyAndNoMigManager) {
  StepHarness h(kMigInventory);
  StubHelm(h, "helm/list-gpu-operator-deployed.json", "helm/values-host-driver-and-toolkit.json");
  auto run = h.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "release gpu-operator does not set mig.strategy=mixed\n");
  // helm get values -o json: Go's encoder, keys sorted.
  const auto values = [&](const std::string& json) {
    h.Stub("helm", "case \"$*\" in\n  *list*) cat '" +
                       StepHarness::Fixture("helm/list-gpu-operator-deployed.json") +
                       "' ;;\n  *values*) echo '" + json + "' ;;\n  *) exit 1 ;;\nesac");
  };
  values(R"({"driver":{"enabled":false},"mig":{"strategy":"mixed"},"toolkit":{"enabled":false}})");
  run = h.Probe("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.out, "release gpu-operator does not set migManager.enabled=false\n");
  values(R"({"driver":{"enabled":false},"mig":{"strategy":"mixed"},)"
         R"("migManager":{"enabled":false},"toolkit":{"enabled":false}})");
  EXPECT_EQ(h.Probe("k8s.gpu-operator", "master1").status, 0);
}

TEST_F(GpuOperatorTest, VerifyCountsEachMigProfile) {
  StepHarness h(kMigInventory);
  NoSleep(h);
  // kubectl's jsonpath prints the allocatable map as compact JSON.
  const auto nodes = [&](const std::string& mig) {
    h.StubOutput("kubectl",
                 "master1\t\t{\"cpu\":\"2\"}\nworker1\t1\t{\"cpu\":\"2\",\"nvidia.com/gpu\":\"1\"" +
                     mig + "}\n");
  };
  nodes(R"(,"nvidia.com/mig-1g.10gb":"7")");
  auto run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
  nodes(R"(,"nvidia.com/mig-1g.10gb":"5")");
  run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "node worker1: allocatable nvidia.com/mig-1g.10gb is 5 (want 7)\n");
  nodes("");
  run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.out, "node worker1: allocatable nvidia.com/mig-1g.10gb is none (want 7)\n");
}

// A plan probes this verification before a new worker joins: waiting would
// not bring the node, so it answers at once (a plan used to stall 90 s).
TEST_F(GpuOperatorTest, VerifyDoesNotWaitForANodeThatIsNotInTheCluster) {
  StepHarness h(KubernetesInventory());
  const std::string slept = (h.dir() / "slept").string();
  h.Stub("sleep", "echo \"$1\" >>'" + slept + "'");
  h.StubFixture("kubectl", "kubectl/gpu-worker2-missing.txt");
  auto run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "node worker2 is not in the cluster (want nvidia.com/gpu 8)\n");
  EXPECT_FALSE(std::filesystem::exists(slept));
  // A node that is there but has no GPUs yet is waited for after a change
  // (the device plugin starts some seconds after its pod).
  h.StubFixture("kubectl", "kubectl/gpu-worker2-no-gpu.txt");
  h.SetEnv("GPUCTL_SETTLE", "1");
  run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(std::filesystem::exists(slept));
}

TEST_F(GpuOperatorTest, VerifyComparesWithTheInventorysCount) {
  StepHarness h(KubernetesInventory(4));
  NoSleep(h);
  h.StubFixture("kubectl", "kubectl/gpu-all-ready.txt");
  const auto run = h.Verify("k8s.gpu-operator", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "node worker2: allocatable nvidia.com/gpu is 8 (want 4)\n");
}

// ---------------------------------------------------------------- k8s.helm

// The helm package at 3.16, its file what PATH finds, and `helm repo list`
// running `repos` (a fixture's text, or an error); helm fails any other
// question, so a probe that ran `helm version` would fail.
void Helm(StepHarness& h, const std::string& repos) {
  StubPackageDatabase(h);
  Package(h, "helm", "3.16.2-1", "install ok installed");
  h.Stub("helm", "case \"$1\" in\n  repo) " + repos + " ;;\n  *) exit 2 ;;\nesac");
  Owns(h, "helm", (h.dir() / "bin/helm").string());
}

std::string RepoList() { return "cat '" + StepHarness::Fixture("helm/repo-list.txt") + "'"; }

constexpr const char* kNoRepositories = "echo 'Error: no repositories to show' >&2; exit 1";

class HelmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(HelmTest, ProbeWantsHelm316AndNvidiasRepository) {
  StepHarness h(KubernetesInventory());
  Helm(h, RepoList());
  auto run = h.Probe("k8s.helm", "master1");
  EXPECT_EQ(run.status, 0) << run.out;

  Helm(h, kNoRepositories);
  run = h.Probe("k8s.helm", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out, "helm repository 'nvidia' is 'missing'")) << run.out;
}

TEST_F(HelmTest, ProbeNamesAnotherVersionAndAHelmThePackageDidNotInstall) {
  StepHarness h(KubernetesInventory());
  Helm(h, RepoList());
  Package(h, "helm", "3.15.4-1", "install ok installed");
  auto run = h.Probe("k8s.helm", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "helm 3.15.4-1 is installed (want 3.16)\n");

  Package(h, "helm", "", "");
  run = h.Probe("k8s.helm", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "helm is not installed (want 3.16)\n");

  // The package is right, but PATH finds a helm it did not put there (a
  // release tarball's, say).
  Package(h, "helm", "3.16.2-1", "install ok installed");
  Owns(h, "helm", "/usr/sbin/helm");
  run = h.Probe("k8s.helm", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "helm on PATH is " + (h.dir() / "bin/helm").string() +
                         ", not the helm package's file\n");
}

TEST_F(HelmTest, ProbeWantsTheMirrorsChartRepositoryAndNoneForAnArchive) {
  // NVIDIA's repository is there (repo-list.txt), but the inventory names a mirror.
  StepHarness h(KubernetesInventory() +
                "mirrors: {gpu_operator_chart: http://mirror.site/charts}\n");
  Helm(h, RepoList());
  auto run = h.Probe("k8s.helm", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(KubernetesHas(run.out,
                            "helm repository 'nvidia' is 'https://helm.ngc.nvidia.com/nvidia' "
                            "(want http://mirror.site/charts)"))
      << run.out;

  // A chart archive needs helm only.
  StepHarness archive(KubernetesInventory() +
                      "mirrors: {gpu_operator_chart: /srv/charts/gpu-operator-v24.3.0.tgz}\n");
  Helm(archive, kNoRepositories);
  run = archive.Probe("k8s.helm", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

}  // namespace
}  // namespace gpuctl
