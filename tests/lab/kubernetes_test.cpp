// The Kubernetes steps (playbooks/60-kubernetes.yaml) on a mixed lab: kubeadm
// init on the Ubuntu master, flannel, an apt worker (worker1) and a dnf worker
// (worker2) joined with tokens made at run time, every node Ready, the GPU
// Operator advertising each worker's 8 GPUs; `check` agrees and a second
// apply sends nothing. No bootstrap token may appear in what gpuctl prints,
// its run journal, or any file it writes.
#include <sstream>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Lab;
using test::Quote;
using test::Result;
using test::Shell;
using test::Trim;
namespace fs = std::filesystem;

class KubernetesLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    lab_ = std::make_unique<Lab>(fmt::format("k{}", getpid()));
    std::string log;
    ASSERT_TRUE(lab_->Up(&log, "--profile mixed")) << log;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
  }
  void TearDown() override {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
  }

  Result Gpuctl(const std::string& args) const {
    return Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " " + args + " " +
                 Quote(lab_->Env("LAB_INVENTORY")) + " 2>&1 </dev/null");
  }
  std::string RunDir(const std::string& name) const { return (runs_ / name).string(); }
  std::string Master(const std::string& command) const {
    return Trim(lab_->Ssh("master1", command).out);
  }

  std::unique_ptr<Lab> lab_;
  fs::path runs_;
};

TEST_F(KubernetesLabTest, InitCniJoinReadyOperatorOnAptAndDnfWorkersThenNothingToDo) {
  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("first"));
  ASSERT_EQ(apply.status, 0) << apply.out;

  // Every node Ready, the workers joined from both package families.
  const std::string ready = Master(
      "kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o jsonpath="
      "'{range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} "
      "{end}'");
  for (const char* node : {"master1", "worker1", "worker2"}) {
    EXPECT_NE(ready.find(std::string(node) + "=True"), std::string::npos) << ready;
  }
  // root's kubeconfig is the admin one; the pod CIDR reached flannel.
  EXPECT_EQ(lab_->Ssh("master1", "cmp /etc/kubernetes/admin.conf /root/.kube/config").status, 0);
  EXPECT_NE(Master("kubectl get cm -n kube-flannel kube-flannel-cfg "
                   "-o jsonpath='{.data.net-conf\\.json}'")
                .find("\"Network\": \"10.244.0.0/16\""),
            std::string::npos);

  // Packages pinned and held the way each family holds them; the SDK's
  // kubectl on the Ubuntu node was replaced by the pinned one.
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "dpkg-query -W -f='${Version}' kubectl").out), "1.30.6-1.1");
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "apt-mark showhold | sort | tr '\\n' ' '").out),
            "kubeadm kubectl kubelet");
  EXPECT_EQ(Trim(lab_->Ssh("worker2", "rpm -q --qf '%{VERSION}' kubelet").out), "1.30.6");
  EXPECT_EQ(
      Trim(lab_->Ssh("worker2", "grep -c '^excludepkgs=kubeadm kubelet kubectl$' /etc/dnf/dnf.conf")
               .out),
      "1");
  EXPECT_NE(lab_->Ssh("worker2", "dnf -q -y install kubeadm-1.31.* 2>&1").status, 0)
      << "dnf upgraded a held package";

  // Each GPU worker advertises its 8 GPUs through the operator's device plugin.
  for (const char* node : {"worker1", "worker2"}) {
    EXPECT_EQ(Master(fmt::format("kubectl get node {} "
                                 "-o jsonpath='{{.status.allocatable.nvidia\\.com/gpu}}'",
                                 node)),
              "8")
        << node;
  }
  EXPECT_EQ(Master("helm list -n gpu-operator -q"), "gpu-operator");

  // No bootstrap token anywhere gpuctl wrote or printed: not init's, not the
  // ones made for the joins (kubeadm token list still shows them all).
  std::istringstream tokens(Master(
      "kubeadm token list -o json | sed -n 's/^ *\"token\": *\"\\([a-z0-9.]*\\)\".*/\\1/p'"));
  int seen = 0;
  for (std::string token; std::getline(tokens, token);) {
    if (token.empty()) continue;
    ++seen;
    const std::string secret = token.substr(token.find('.') + 1);
    EXPECT_EQ(apply.out.find(secret), std::string::npos) << "a token secret in gpuctl's output";
    EXPECT_NE(Shell("grep -rqF " + Quote(secret) + " " + Quote(runs_.string())).status, 0)
        << "a token secret in the run directory";
    for (const char* node : {"master1", "worker1", "worker2"}) {
      EXPECT_NE(
          lab_->Ssh(node, "grep -rqsF " + Quote(secret) + " /var/log/gpuctl /root/.kube").status, 0)
          << "a token secret in gpuctl's files on " << node;
    }
  }
  EXPECT_GE(seen, 3) << "init's token and one per joined worker";

  const Result check = Gpuctl("check");
  EXPECT_EQ(check.status, 0) << check.out;

  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("second"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("second")), 0) << again.out;

  // A worker reset behind gpuctl's back joins again with a new token; its old
  // Node object stays Ready for a while, which the change waits out.
  ASSERT_EQ(lab_->Ssh("worker2", "kubeadm reset -f >/dev/null 2>&1").status, 0);
  const Result plan = Gpuctl("plan");
  EXPECT_NE(plan.out.find("/etc/kubernetes/kubelet.conf is missing (not joined)"),
            std::string::npos)
      << plan.out;
  const Result rejoin = Gpuctl("apply --yes --run-dir " + RunDir("rejoin"));
  EXPECT_EQ(rejoin.status, 0) << rejoin.out;
  EXPECT_GE(ChangesIn(RunDir("rejoin")), 1) << rejoin.out;
  EXPECT_TRUE(test::PollUntil(std::chrono::seconds(60), [&] {
    return Master(
               "kubectl get node worker2 -o jsonpath="
               "'{.status.conditions[?(@.type==\"Ready\")].status}'") == "True";
  }));
}

}  // namespace
}  // namespace gpuctl
