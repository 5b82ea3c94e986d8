// The steps that build the cluster's control plane and join nodes to it
// (k8s.init, k8s.join in playbooks/60-kubernetes.yaml; slurm.munge,
// slurm.controller in 70-slurm.yaml): what their probes conclude from the
// node's files and from kubectl's real messages. Files are faked in a private
// mount namespace (root only); tools are stubbed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

std::string ClusterInventory(const std::string& orchestrator) {
  return "cluster: t\norchestrator: " + orchestrator +
         "\nnodes:\n"
         "  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: worker1\n    address: 198.18.0.11\n    os: rocky-9\n    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}}\n";
}

constexpr const char* kKubeletConf = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority: /etc/kubernetes/pki/ca.crt
    server: https://198.18.0.10:6443
  name: default-cluster
kind: Config
)";

class ClusterStepsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(ClusterStepsTest, JoinNeedsAKubeletConfForThisMasterAndARegisteredNode) {
  StepHarness h(ClusterInventory("kubernetes"));
  auto run = h.Probe("k8s.join", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("/etc/kubernetes/kubelet.conf is missing (not joined)"), std::string::npos)
      << run.out;

  std::string elsewhere = kKubeletConf;
  elsewhere.replace(elsewhere.find("198.18.0.10"), 11, "198.18.9.99");
  h.File("/etc/kubernetes/kubelet.conf", elsewhere);
  run = h.Probe("k8s.join", "worker1");
  EXPECT_NE(run.out.find("points at 'https://198.18.9.99:6443', not the master"), std::string::npos)
      << run.out;

  h.File("/etc/kubernetes/kubelet.conf", kKubeletConf);
  // kubectl's own message for a node object that does not exist.
  h.StubOutput("kubectl", "Error from server (NotFound): nodes \"worker1\" not found\n", 1);
  run = h.Probe("k8s.join", "worker1");
  EXPECT_NE(run.out.find("node worker1 is not registered in the cluster"), std::string::npos)
      << run.out;
  h.StubOutput("kubectl", "node/worker1\n");
  EXPECT_EQ(h.Probe("k8s.join", "worker1").status, 0);
}

TEST_F(ClusterStepsTest, InitComparesWhatKubeadmWroteWithTheInventory) {
  StepHarness h(ClusterInventory("kubernetes"));
  EXPECT_NE(h.Probe("k8s.init", "master1").out.find("kubeadm init has not run"), std::string::npos);
  h.File("/etc/kubernetes/admin.conf", kKubeletConf);
  h.File("/root/.kube/config", kKubeletConf);
  h.StubOutput("kubectl", "ok");
  h.File("/etc/kubernetes/manifests/kube-controller-manager.yaml",
         "spec:\n  containers:\n  - command:\n    - kube-controller-manager\n"
         "    - --cluster-cidr=10.245.0.0/16\n");
  h.File("/etc/kubernetes/manifests/kube-apiserver.yaml",
         "spec:\n  containers:\n  - command:\n    - kube-apiserver\n"
         "    - --advertise-address=198.18.0.10\n    - --service-cluster-ip-range=10.96.0.0/12\n");
  auto run = h.Probe("k8s.init", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("initialised with --cluster-cidr '10.245.0.0/16' (want 10.244.0.0/16"),
            std::string::npos)
      << run.out;
  h.File("/etc/kubernetes/manifests/kube-controller-manager.yaml",
         "spec:\n  containers:\n  - command:\n    - kube-controller-manager\n"
         "    - --cluster-cidr=10.244.0.0/16\n");
  EXPECT_EQ(h.Probe("k8s.init", "master1").status, 0);
  // The API server down: kubectl's dial error, first line kept.
  h.StubOutput("kubectl",
               "The connection to the server 198.18.0.10:6443 was refused - did you specify the "
               "right host or port?\n",
               1);
  EXPECT_NE(h.Probe("k8s.init", "master1")
                .out.find("the API server does not answer: The "
                          "connection to the server"),
            std::string::npos);
}

TEST_F(ClusterStepsTest, MungeKeyMustBeOwnedByMungeWithMode400) {
  StepHarness h(ClusterInventory("slurm"));
  h.StubOutput("dpkg-query", "install ok installed");
  EXPECT_NE(h.Probe("slurm.munge", "master1").out.find("/etc/munge/munge.key is missing"),
            std::string::npos);
  h.File("/etc/munge/munge.key", "0123456789abcdef0123456789abcdef", std::filesystem::perms(0400));
  const auto run = h.Probe("slurm.munge", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("is owned by root with mode 400 (want munge, 400)"), std::string::npos)
      << run.out;
}

TEST_F(ClusterStepsTest, ControllerMustRunWithTheCurrentConfig) {
  StepHarness h(ClusterInventory("slurm"));
  h.StubOutput("dpkg-query", "", 1);
  EXPECT_NE(h.Probe("slurm.controller", "master1").out.find("slurmctld is not installed"),
            std::string::npos);
  h.StubOutput("dpkg-query", "install ok installed");
  // Enabled and active, but started long before the files were written.
  h.Stub("systemctl", "case \"$1\" in show) echo 'Thu 2026-01-01 00:00:00 UTC' ;; esac\nexit 0");
  h.File("/etc/slurm/slurm.conf", "ClusterName=t\n");
  h.File("/etc/slurm/gres.conf", "AutoDetect=off\n");
  h.File("/etc/slurm/cgroup.conf", "CgroupPlugin=autodetect\n");
  const auto run = h.Probe("slurm.controller", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("slurmctld is not running with the current slurm.conf"), std::string::npos)
      << run.out;
  h.Stub("systemctl", "case \"$1\" in show) date -d '+1 hour' ;; esac\nexit 0");
  EXPECT_EQ(h.Probe("slurm.controller", "master1").status, 0);
}

// slurm.conf as an admin would write it by hand for the test inventory: the
// probe must render exactly this (gres.conf is checked after it, so a
// gres.conf mismatch proves slurm.conf matched).
constexpr const char* kSlurmConf =
    R"(# Written by gpuctl (step slurm.config) from the inventory; edits are replaced.
ClusterName=t
SlurmctldHost=master1(198.18.0.10)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=1
GresTypes=gpu
MpiDefault=none
NodeName=worker1 NodeAddr=198.18.0.11 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=128000 Gres=gpu:8 State=UNKNOWN
PartitionName=batch Nodes=worker1 Default=YES MaxTime=INFINITE State=UP
)";

// What the node_hardware input reads on worker1 (the H100 machine's figures).
constexpr const char* kWorker1Hardware =
    "worker1 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 "
    "RealMemory=128000";

TEST_F(ClusterStepsTest, SlurmConfigIsRenderedFromTheInventory) {
  StepHarness h(ClusterInventory("slurm"));
  h.SetEnv("GPUCTL_NODE_HARDWARE", kWorker1Hardware);
  h.StubOutput("id", "997\n");  // a distribution's dynamic uid
  auto run = h.Probe("slurm.config", "worker1");
  EXPECT_NE(run.out.find("the slurm user's uid is 997 (want 64030 on every node)"),
            std::string::npos)
      << run.out;
  h.StubOutput("id", "64030\n");
  h.File("/etc/slurm/slurm.conf", std::string(kSlurmConf) + "NodeName=old\n");
  run = h.Probe("slurm.config", "worker1");
  EXPECT_NE(run.out.find("/etc/slurm/slurm.conf is missing or differs"), std::string::npos)
      << run.out;
  h.File("/etc/slurm/slurm.conf", kSlurmConf);
  h.File("/etc/slurm/gres.conf",
         "# Written by gpuctl (step slurm.config) from the inventory; edits are replaced.\n"
         "AutoDetect=off\nNodeName=worker1 Name=gpu File=/dev/nvidia[0-6]\n");
  run = h.Probe("slurm.config", "worker1");
  EXPECT_NE(run.out.find("/etc/slurm/gres.conf is missing or differs"), std::string::npos)
      << run.out;
}

// A partition's max_time and default_time (slurm_partitions' fourth and
// fifth fields, '-' for no DefaultTime) reach its PartitionName line.
TEST_F(ClusterStepsTest, PartitionTimeLimitsReachSlurmConf) {
  StepHarness h(ClusterInventory("slurm"));
  h.SetEnv("GPUCTL_NODE_HARDWARE", kWorker1Hardware);
  h.SetEnv("GPUCTL_SLURM_PARTITIONS", "gpu worker1 YES 2-00:00:00 60\nall worker1 NO INFINITE -");
  h.StubOutput("id", "64030\n");
  std::string conf = kSlurmConf;
  conf.replace(conf.find("PartitionName="), std::string::npos,
               "PartitionName=gpu Nodes=worker1 Default=YES MaxTime=2-00:00:00 DefaultTime=60 "
               "State=UP\nPartitionName=all Nodes=worker1 Default=NO MaxTime=INFINITE State=UP\n");
  h.File("/etc/slurm/slurm.conf", conf);
  // slurm.conf matched when the probe goes on to gres.conf.
  const auto run = h.Probe("slurm.config", "worker1");
  EXPECT_NE(run.out.find("/etc/slurm/gres.conf is missing or differs"), std::string::npos)
      << run.out;
}

TEST_F(ClusterStepsTest, SlurmNodeHardwareIsWhatSlurmdWouldFind) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(ClusterInventory("slurm"));
  // The H100 machine: 16 CPUs on one socket, 131981020 kB (125.9 GiB) of
  // memory, rounded down to whole GiB (125 GiB, 128000 MB).
  h.StubFixture("lscpu", "lscpu/h100-host-16cpu.txt");
  h.StubOutput("nproc", "16\n");
  h.File("/proc/meminfo", StepHarness::FixtureText("proc/meminfo-128g.txt"));
  auto run = h.Input("slurm.config", "node_hardware", "worker1");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, std::string(kWorker1Hardware).substr(8) + "\n");

  // A CPU taken offline: the topology no longer multiplies out to the CPU
  // count, so only the count is stated (Slurm derives the rest).
  h.StubOutput("nproc", "15\n");
  run = h.Input("slurm.config", "node_hardware", "worker1");
  EXPECT_EQ(run.out, "CPUs=15 RealMemory=128000\n");

  // The development machine's lscpu and memory (24 GiB, rounded to 23).
  h.StubFixture("lscpu", "lscpu/debian12-vm-2cpu.txt");
  h.StubOutput("nproc", "2\n");
  h.File("/proc/meminfo", StepHarness::FixtureText("proc/meminfo-24g.txt"));
  run = h.Input("slurm.config", "node_hardware", "worker1");
  EXPECT_EQ(run.out,
            "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 "
            "RealMemory=23552\n");
}

// worker1 with two H100s: GPU 0 split into two 1g.10gb MIG devices, GPU 1 whole.
std::string SlurmMigInventory() {
  std::string inv = ClusterInventory("slurm");
  inv.replace(inv.find("count: 8}}"), 10,
              "count: 2, mig: [{gpus: \"0\", instances: {1g.10gb: 2}}]}}");
  return inv;
}

// `nvidia-smi mig -lgi` for that layout, in the real table's columns (the
// lab's stand-in prints the published captures' layout).
constexpr const char* kMigGpuInstances =
    "+---------------------------------------------------------+\n"
    "| GPU instances:                                          |\n"
    "| GPU   Name               Profile  Instance   Placement  |\n"
    "|                            ID       ID       Start:Size |\n"
    "|=========================================================|\n"
    "|   0  MIG 1g.10gb           19        1          0:1     |\n"
    "+---------------------------------------------------------+\n"
    "|   0  MIG 1g.10gb           19        2          1:1     |\n"
    "+---------------------------------------------------------+\n";

// A MIG node's records are all typed: the whole GPU by its model, each MIG
// device by its profile with its GPU's node and its GPU and compute
// instances' capability nodes, whose minors the input reads from the
// driver's /proc/driver/nvidia/capabilities.
TEST_F(ClusterStepsTest, MigDevicesReachGresConfWithTheirCapabilityNodes) {
  StepHarness h(SlurmMigInventory());
  h.StubOutput("nvidia-smi", kMigGpuInstances);
  const Step* config = h.catalog().Find("slurm.config");
  ASSERT_NE(config, nullptr);
  std::string input;
  for (const StepInput& in : config->inputs) {
    if (in.name == "mig_devices") input = in.script;
  }
  ASSERT_FALSE(input.empty());
  // The driver's files, on a tmpfs over this namespace's /proc/driver.
  std::string driver = "mount -t tmpfs tmpfs /proc/driver || exit 9\n";
  for (const auto& [path, minor] :
       std::vector<std::pair<std::string, int>>{{"gpu0/mig/gi1", 12},
                                                {"gpu0/mig/gi1/ci0", 13},
                                                {"gpu0/mig/gi2", 21},
                                                {"gpu0/mig/gi2/ci0", 22}}) {
    const std::string dir = "/proc/driver/nvidia/capabilities/" + path;
    driver += "mkdir -p " + dir + " && printf 'DeviceFileMinor: " + std::to_string(minor) +
              "\\nDeviceFileMode: 292\\nDeviceFileModify: 1\\n' >" + dir + "/access\n";
  }
  auto run = h.Script(driver + "(\n" + input + "\n)", "slurm.config", "worker1");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "0 1g.10gb 12 13\n0 1g.10gb 21 22\n");
  // Without GPU instances the input starts nothing (nvidia-smi would fail).
  h.StubOutput("nvidia-smi", "", 9);
  run = h.Script("mount -t tmpfs tmpfs /proc/driver || exit 9\n(\n" + input + "\n)", "slurm.config",
                 "worker1");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "");

  h.SetEnv("GPUCTL_MIG_DEVICES",
           "worker1 0 1g.10gb 12 13\nworker1 0 1g.10gb 21 22\n"
           "worker1 0 1g.10gb 30 31;reboot\nworker9 0 1g.10gb 39 40");
  run = h.Script("slurm_gres_conf; slurm_conf | grep '^NodeName'", "slurm.config", "worker1");
  EXPECT_EQ(
      run.out,
      "# Written by gpuctl (step slurm.config) from the inventory; edits are replaced.\n"
      "AutoDetect=off\n"
      "NodeName=worker1 Name=gpu Type=h100_80gb_hbm3 File=/dev/nvidia1\n"
      "NodeName=worker1 Name=gpu Type=1g.10gb "
      "MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13\n"
      "NodeName=worker1 Name=gpu Type=1g.10gb "
      "MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22\n"
      "NodeName=worker1 NodeAddr=198.18.0.11 Gres=gpu:h100_80gb_hbm3:1,gpu:1g.10gb:2 "
      "State=UNKNOWN\n");
}

// Debian 12's Slurm as dpkg-query -W -f='${Version}' and rpm -q --qf
// '%{VERSION}-%{RELEASE}' print it (the lab's Rocky rpms carry the same).
constexpr const char* kDebianSlurm = "22.05.8-4+deb12u3";

std::string SlurmInventory(const std::string& series) {
  return "versions: {slurm: \"" + series + "\"}\n" + ClusterInventory("slurm");
}

TEST_F(ClusterStepsTest, SlurmPackagesMustBeOfTheInventorysSeries) {
  struct Case {
    const char* series;
    const char* master_line;  // slurm.controller's probe on Ubuntu
    const char* worker_line;  // slurm.node's on Rocky
  };
  const Case cases[] = {
      // Packages of the series: the probe goes on to the service.
      {"22.05", "slurmctld is not enabled at boot\n", "slurmd is not enabled at boot\n"},
      {"22.05.8", "slurmctld is not enabled at boot\n", "slurmd is not enabled at boot\n"},
      // 22.0 is not a prefix of 22.05 in the sense of a series.
      {"22.0", "slurmctld 22.05.8-4+deb12u3 is installed (want Slurm 22.0)\n",
       "slurm-slurmd 22.05.8-4+deb12u3 is installed (want Slurm 22.0)\n"},
      {"23.02", "slurmctld 22.05.8-4+deb12u3 is installed (want Slurm 23.02)\n",
       "slurm-slurmd 22.05.8-4+deb12u3 is installed (want Slurm 23.02)\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.series);
    StepHarness h(SlurmInventory(c.series));
    h.StubOutput("dpkg-query", kDebianSlurm);
    h.Stub("rpm", std::string("case \"$*\" in *--quiet*) exit 0 ;; esac\necho ") + kDebianSlurm);
    h.StubOutput("systemctl", "", 1);  // is-enabled --quiet: disabled
    const auto master = h.Probe("slurm.controller", "master1");
    EXPECT_EQ(master.status, 1);
    EXPECT_EQ(master.out, c.master_line);
    const auto worker = h.Probe("slurm.node", "worker1");
    EXPECT_EQ(worker.status, 1);
    EXPECT_EQ(worker.out, c.worker_line);
  }
  // Without versions.slurm any installed version will do.
  StepHarness h(ClusterInventory("slurm"));
  h.StubOutput("dpkg-query", "21.08.5-2ubuntu1");
  h.StubOutput("systemctl", "", 1);  // is-enabled --quiet: disabled
  EXPECT_EQ(h.Probe("slurm.controller", "master1").out, "slurmctld is not enabled at boot\n");
}

TEST_F(ClusterStepsTest, SlurmInstallPinsTheSeriesOrNamesWhatTheRepositoriesOffer) {
  for (const std::string series : {"22.05", "23.02"}) {
    SCOPED_TRACE(series);
    StepHarness h(SlurmInventory(series));
    const std::string log = (h.dir() / "apt-get.log").string();
    h.StubFixture("apt-cache", "apt/apt-cache-madison-slurmd.txt");
    h.Stub("apt-get", "echo \"$*\" >>" + log);
    for (const char* tool : {"dpkg", "mkdir", "chown", "systemctl"}) h.StubOutput(tool, "");
    const auto run = h.Change("slurm.controller", "master1");
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    const std::string calls = text.str();
    if (series == "22.05") {
      EXPECT_EQ(run.status, 0) << run.out;
      EXPECT_NE(calls.find("install --allow-downgrades --allow-change-held-packages "
                           "slurmctld=22.05.8-4+deb12u3 slurm-client=22.05.8-4+deb12u3\n"),
                std::string::npos)
          << calls;
    } else {
      EXPECT_EQ(run.status, 1);
      EXPECT_EQ(run.out,
                "gpuctl: the repositories offer no slurmctld of Slurm 23.02 (versions.slurm); "
                "they have: 22.05.8-4+deb12u3\n");
      EXPECT_EQ(calls, "");  // nothing installed, no service touched
    }
  }
}

TEST_F(ClusterStepsTest, SlurmdMustBeEnabled) {
  StepHarness h(ClusterInventory("slurm"));
  // worker1 is Rocky: slurm-slurmd and slurm installed
  h.Stub("rpm", std::string("case \"$*\" in *--quiet*) exit 0 ;; esac\necho ") + kDebianSlurm);
  h.StubOutput("systemctl", "disabled\n", 1);
  const auto run = h.Probe("slurm.node", "worker1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("slurmd is not enabled at boot"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace gpuctl
