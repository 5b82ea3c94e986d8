// versions.cni: calico on a real lab (an Ubuntu master, a Rocky worker; the
// stand-in API server plays calico-node, docs/standins-kubernetes.md): apply
// installs Calico from the site's copy of its release manifest (the lab's
// mirror, as an air-gapped site keeps it), calico-node's default IPv4 pool is
// the inventory's pod CIDR, both nodes turn Ready with Calico's CNI
// configuration, a second apply changes nothing, and the same cluster named
// flannel in the inventory is refused rather than moved to another CNI.
#include <fstream>

#include <gtest/gtest.h>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Quote;
using test::Result;
using test::Shell;
using test::Trim;

class CalicoLabTest : public test::LabCase {
 protected:
  std::string Prefix() const override { return "ca"; }
  std::string Shape() const override { return "--nodes 2 --rocky 1"; }
  // The pod network and what it waits for: init, the join, Ready nodes.
  std::string Only() const override { return "k8s.nodes-ready"; }

  std::string OnMaster(const std::string& kubectl_args) const {
    return Trim(
        lab_->Ssh("master1", "kubectl --kubeconfig /etc/kubernetes/admin.conf " + kubectl_args)
            .out);
  }
};

TEST_F(CalicoLabTest, InstallsCalicoWithThePodCidrAndRefusesToMoveTheClusterToFlannel) {
  // The lab's inventory with Calico: its mirror's copy of calico.yaml.
  std::string text = test::ReadFile(lab_->Env("LAB_INVENTORY"));
  const std::string flannel = "/mirror/kube-flannel.yml";
  ASSERT_NE(text.find(flannel), std::string::npos) << text;
  text.replace(text.find(flannel), flannel.size(), "/mirror/calico.yaml");
  std::filesystem::create_directories(runs_);
  const std::string calico_inventory = (runs_ / "calico.yaml").string();
  std::ofstream(calico_inventory) << text << "versions:\n  cni: calico\n";
  const auto with_calico = [&](const std::string& args) {
    return Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " " + args + " " +
                 Quote(calico_inventory) + " 2>&1 </dev/null");
  };

  const Result apply = with_calico("apply --yes --run-dir " + RunDir("first"));
  ASSERT_EQ(apply.status, 0) << apply.out;
  EXPECT_EQ(OnMaster("get ippools.crd.projectcalico.org default-ipv4-ippool -o "
                     "jsonpath='{.spec.cidr}'"),
            "10.244.0.0/16");
  EXPECT_EQ(OnMaster("get nodes --no-headers | awk '{ print $1, $2 }'"),
            "master1 Ready\nworker1 Ready");
  // What was applied is kept on the master: the mirror's calico.yaml.
  EXPECT_NE(lab_->Ssh("master1", "cat /etc/kubernetes/gpuctl/calico.yaml")
                .out.find("image: docker.io/calico/node:v3.28.1"),
            std::string::npos);
  for (const char* node : {"master1", "worker1"}) {
    SCOPED_TRACE(node);
    EXPECT_EQ(Trim(lab_->Ssh(node,
                             "cd /etc/cni/net.d && test -f 10-calico.conflist && "
                             "test ! -e 10-flannel.conflist && echo calico only")
                       .out),
              "calico only");
    EXPECT_NE(lab_->Ssh(node, "cat /etc/cni/net.d/10-calico.conflist")
                  .out.find(std::string("\"nodename\": \"") + node + "\""),
              std::string::npos);
  }
  EXPECT_EQ(OnMaster("get pods -n kube-system --no-headers | grep -c '^calico-node-.* Running'"),
            "2");

  const Result again = with_calico("apply --yes --run-dir " + RunDir("again"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("again")), 0) << again.out;

  // The lab's own inventory says flannel: this cluster runs Calico, and
  // gpuctl refuses to lay a second pod network over it.
  const Result plan = Gpuctl("plan");
  EXPECT_NE(plan.status, 0) << plan.out;
  EXPECT_NE(plan.out.find("Calico runs this cluster's pod network and versions.cni says "
                          "flannel: gpuctl does not move a running cluster to another CNI"),
            std::string::npos)
      << plan.out;
}

}  // namespace
}  // namespace gpuctl
