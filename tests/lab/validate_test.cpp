// Deep validation (playbooks/90-validate.yaml, `gpuctl check --deep`) on a
// mixed lab: worker1 (Ubuntu, apt) and worker2 (Rocky, dnf) with 8 GPUs and
// two 200 Gb/s IB ports each. The GPU layer comes from gpuctl apply; the
// test tools (nccl-tests, perftest, mpirun), root SSH from the master and a
// Kubernetes cluster with the GPU Operator are set up here by hand, as
// os.ssh-keys and the Kubernetes steps would. Then the figures must pass
// the inventory's thresholds, and an ib-down fault on worker2 must show in
// both the NCCL and the ib_send_bw line.
#include <regex>

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

class ValidateLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    lab_ = std::make_unique<Lab>(fmt::format("va{}", getpid()));
    std::string log;
    ASSERT_TRUE(lab_->Up(&log, "--profile mixed")) << log;
    dir_ = fs::path(lab_->Env("LAB_STATE")) / "validate-test";
    // The GPU layer and the validation steps only: apply must not wait on
    // every other layer of the catalog to bring a driver up. The repository
    // steps come along: the driver needs CUDA's on the Rocky worker, and the
    // tools installed by hand below come from the vendors' repositories.
    fs::create_directories(dir_ / "playbooks");
    for (const char* file : {"prelude.sh", "12-repos.yaml", "20-gpu.yaml", "90-validate.yaml"}) {
      fs::copy_file(fs::path(GPUCTL_SOURCE_DIR) / "playbooks" / file, dir_ / "playbooks" / file);
    }
    std::ofstream(dir_ / "inventory.yaml")
        << test::ReadFile(lab_->Env("LAB_INVENTORY"))
        << "validation: {nccl_min_busbw_gbps: 40, ib_min_bw_gbps: 180}\n";
  }
  void TearDown() override {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
  }

  Result Gpuctl(const std::string& args) const {
    return Shell("NO_COLOR=1 GPUCTL_PLAYBOOKS=" + Quote((dir_ / "playbooks").string()) + " " +
                 GPUCTL_BINARY + " " + args + " " + Quote((dir_ / "inventory.yaml").string()) +
                 " 2>&1 </dev/null");
  }
  void MustRun(const std::string& node, const std::string& command) const {
    const Result r = lab_->Ssh(node, command + " 2>&1");
    ASSERT_EQ(r.status, 0) << node << ": " << command << "\n" << r.out;
  }

  // What os.ssh-keys will do: the master's key authorized on the workers,
  // the workers in the master's known_hosts.
  void RootSsh() const {
    MustRun("master1", "ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_ed25519");
    const std::string key = Trim(lab_->Ssh("master1", "cat /root/.ssh/id_ed25519.pub").out);
    for (const char* w : {"worker1", "worker2"}) {
      MustRun(w, "echo " + Quote(key) + " >> /root/.ssh/authorized_keys");
    }
    MustRun("master1", "ssh-keyscan -t ed25519 worker1 worker2 > /root/.ssh/known_hosts");
  }

  // docs/standins-kubernetes.md, "How a cluster comes up".
  void Kubernetes() const {
    const std::string prep =
        "sysctl -w net.ipv4.ip_forward=1 && "
        "echo 'net.bridge.bridge-nf-call-iptables = 1' > /etc/sysctl.d/k8s.conf && ";
    const std::string apt =
        "export DEBIAN_FRONTEND=noninteractive; dpkg --remove --force-depends kubectl; "
        "apt-get install -y -q kubeadm=1.30.* kubelet=1.30.* kubectl=1.30.*";
    // helm only where repos.helm added Helm's repository: the master.
    MustRun("master1", prep + apt + " helm");
    const Result init = lab_->Ssh(
        "master1", "kubeadm init --pod-network-cidr=10.244.0.0/16 --ignore-preflight-errors=all");
    ASSERT_EQ(init.status, 0) << init.out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(init.out, m,
                                  std::regex(R"((kubeadm join \S+ --token \S+) \\\s+(--\S+ \S+))")))
        << init.out;
    const std::string join = m[1].str() + " " + m[2].str() + " --ignore-preflight-errors=all";
    MustRun("worker1", prep + apt + " && " + join);
    MustRun("worker2", prep + "dnf -y -q install 'kubeadm-1.30.*' 'kubelet-1.30.*' && " + join);
    MustRun("master1",
            "kubectl apply -f https://github.com/flannel-io/flannel/releases/latest/download/"
            "kube-flannel.yml && helm repo add nvidia https://helm.ngc.nvidia.com/nvidia && "
            "helm install --wait gpu-operator nvidia/gpu-operator -n gpu-operator "
            "--create-namespace --set driver.enabled=false");
    // The kubelets report their GPUs in their next heartbeats.
    EXPECT_TRUE(test::PollUntil(std::chrono::seconds(90), [&] {
      return Trim(lab_->Ssh("master1",
                            "kubectl get nodes -o jsonpath='{.items[*].status.allocatable."
                            "nvidia\\.com/gpu}'")
                      .out) == "8 8";
    }));
  }

  std::unique_ptr<Lab> lab_;
  fs::path dir_;
};

double Figure(const std::string& out, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(pattern))) return -1;
  return std::stod(m[1].str());
}

TEST_F(ValidateLabTest, CheckDeepReportsFiguresAndAnIbFaultFailsThem) {
  const Result apply = Gpuctl("apply --yes");
  ASSERT_EQ(apply.status, 0) << apply.out;
  // The deep steps are never planned: a second apply has nothing to do.
  const Result again = Gpuctl("apply --yes");
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(again.out.find("validate."), std::string::npos) << again.out;

  MustRun("worker1", "DEBIAN_FRONTEND=noninteractive apt-get install -y -q nccl-tests perftest");
  MustRun("worker2", "dnf -y -q install nccl-tests perftest");
  MustRun("master1", "DEBIAN_FRONTEND=noninteractive apt-get install -y -q openmpi-bin");
  RootSsh();
  Kubernetes();

  const Result good = Gpuctl("check --deep");
  EXPECT_EQ(good.status, 0) << good.out;
  EXPECT_NE(good.out.find("GPU pod on worker1: GPU 0: NVIDIA A100-SXM4-80GB"), std::string::npos)
      << good.out;
  // 2 nodes x 2 x 200 Gb/s: 50 GB/s on the wire, ~93 % of it as busbw.
  const double busbw = Figure(
      good.out, R"(all_reduce_perf 2 nodes x 8 GPUs: busbw ([0-9.]+) GB/s at 8G \(min 40\))");
  EXPECT_GT(busbw, 40) << good.out;
  EXPECT_LT(busbw, 50) << good.out;
  const double ib =
      Figure(good.out, R"(ib_send_bw: worker1<->worker2 ([0-9.]+) Gb/s \(mlx5_[01]\) \(min 180\))");
  EXPECT_GT(ib, 180) << good.out;
  EXPECT_LT(ib, 200) << good.out;
  // Nothing is left behind: the test pod is gone, no test process runs.
  EXPECT_EQ(Trim(lab_->Ssh("master1", "kubectl get pods -o name").out), "");
  for (const char* w : {"worker1", "worker2"}) {
    EXPECT_NE(lab_->Ssh(w, "pgrep -f 'ib_send_bw|all_reduce_perf'").status, 0) << w;
  }

  ASSERT_EQ(Shell(lab_->Tool("fault worker2 ib-down=mlx5_1")).status, 0);
  const Result bad = Gpuctl("check --deep");
  EXPECT_NE(bad.status, 0) << bad.out;
  const double half = Figure(
      bad.out,
      R"(all_reduce_perf 2 nodes x 8 GPUs: busbw ([0-9.]+) GB/s at 8G, below the minimum 40)");
  EXPECT_NEAR(half, busbw / 2, busbw * 0.05) << bad.out;
  EXPECT_NE(
      bad.out.find("ib_send_bw worker1<->worker2 mlx5_1 failed on worker2: Port number 1 state is "
                   "Down"),
      std::string::npos)
      << bad.out;
  EXPECT_NE(bad.out.find("GPU pod on worker1"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace gpuctl
