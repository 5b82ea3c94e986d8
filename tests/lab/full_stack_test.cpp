// The whole catalog from freshly started nodes to a working GPU cluster, as
// the README's demo runs it: one apply, a green check, and a second apply
// that sends nothing. Kubernetes with the GPU Operator on an Ubuntu master
// with an Ubuntu and a Rocky GPU worker and an NFS storage node; Slurm on the
// same shape. The areas' own lab tests look closer at each layer; this one
// proves the layers fit together in one run.
#include <utility>

#include <gtest/gtest.h>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Result;
using test::Trim;

class KubernetesStackTest : public test::LabCase {
 protected:
  std::string Prefix() const override { return "fk"; }
};

class SlurmStackTest : public test::LabCase {
 protected:
  std::string Shape() const override { return "--profile slurm"; }
  std::string Prefix() const override { return "fs"; }
};

// Asserts the one-apply convergence every stack must show.
void ConvergesInOneApply(const Result& apply, const Result& check, const Result& again,
                         int second_changes) {
  ASSERT_EQ(apply.status, 0) << apply.out;
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find(", 0 mismatches, 0 unreachable"), std::string::npos) << check.out;
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(second_changes, 0) << again.out;
}

TEST_F(KubernetesStackTest, BareNodesToGpuPodsInOneApply) {
  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("first"));
  const Result check = Gpuctl("check");
  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("second"));
  ConvergesInOneApply(apply, check, again, ChangesIn(RunDir("second")));

  // What an admin would look at: GPUs schedulable on both workers.
  const std::string allocatable = Trim(
      lab_->Ssh("master1",
                "kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o jsonpath="
                "'{range .items[*]}{.metadata.name}={.status.allocatable.nvidia\\.com/gpu} {end}'")
          .out);
  EXPECT_NE(allocatable.find("worker1=8"), std::string::npos) << allocatable;
  EXPECT_NE(allocatable.find("worker2=8"), std::string::npos) << allocatable;
}

TEST_F(SlurmStackTest, BareNodesToGpuJobsInOneApply) {
  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("first"));
  const Result check = Gpuctl("check");
  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("second"));
  ConvergesInOneApply(apply, check, again, ChangesIn(RunDir("second")));

  // A job asking for all eight GPUs runs in each partition: a100 on the
  // Ubuntu worker, h100 on the Rocky one (the profile's partitions).
  for (const auto& [partition, node] :
       {std::pair{"a100", "worker1"}, std::pair{"h100", "worker2"}}) {
    const Result job = lab_->Ssh(
        "master1", std::string("timeout 120 srun -p ") + partition + " --gres=gpu:8 hostname");
    EXPECT_EQ(job.status, 0) << partition;
    EXPECT_EQ(Trim(job.out), node) << partition;
  }
}

}  // namespace
}  // namespace gpuctl
