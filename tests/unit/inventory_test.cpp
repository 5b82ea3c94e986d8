// Inventory validation: each error case, at its exact position.
#include "gpuctl/model/inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using ::testing::HasSubstr;
using testing::kMinimalInventory;
using ::testing::Not;
using testing::ParseText;

// kMinimalInventory with `extra` inserted before `nodes:` (line 2).
std::string WithTop(const std::string& extra) {
  std::string text = kMinimalInventory;
  text.insert(text.find("nodes:"), extra);
  return text;
}

TEST(InventoryErrors, MinimalInventoryIsClean) {
  auto p = ParseText(kMinimalInventory);
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_TRUE(p.diagnostics.All().empty());
}

TEST(InventoryErrors, SyntaxError) {
  auto p = ParseText("cluster: lab\nnodes: [\n  {name: a\n");
  EXPECT_FALSE(p.inventory);
  ASSERT_EQ(p.diagnostics.All().size(), 1U);
  EXPECT_THAT(p.diagnostics.Format(), HasSubstr("/lab/inv.yaml:4:1: error: invalid YAML: "));
}

TEST(InventoryErrors, EmptyFile) {
  auto p = ParseText("# nothing yet\n");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 1, 1, "empty inventory"));
}

TEST(InventoryErrors, UnknownKeysGetSuggestions) {
  auto p = ParseText(R"(cluster: lab
orchestratr: slurm
nodes:
  - name: m1
    adress: 198.18.0.10
    address: 198.18.0.10
    os: ubuntu-22.04
    roles: [master]
    ssh: {usr: admin}
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 2, 1,
                            "unknown key 'orchestratr' (did you mean 'orchestrator'?)"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 5, 5, "unknown key 'adress' (did you mean 'address'?)"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 9, 11, "unknown key 'usr' (did you mean 'user'?)"));
}

TEST(InventoryErrors, WrongTypes) {
  auto p = ParseText(R"(cluster: lab
ssh:
  port: abc
  become: maybe
policy: [docker]
nodes:
  - name: m1
    address: 198.18.0.10
    os: ubuntu-22.04
    roles: master
)");
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 9, "expected an integer, got 'abc'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 11, "expected true or false, got 'maybe'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 5, 9, "expected a mapping, got a list"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 10, 12, "expected a list, got 'master'"));
}

TEST(InventoryErrors, MissingRequiredKeys) {
  auto p = ParseText("ssh: {user: root}\nnodes:\n  - name: m1\n    roles: [master]\n");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 1, 1, "missing required key 'cluster'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 5, "missing required key 'address'"));
  // `os` may be left out: the node's os-release decides (os: auto).
  EXPECT_EQ(p.diagnostics.Format().find("'os'"), std::string::npos) << p.diagnostics.Format();
}

TEST(InventoryErrors, DuplicateNodeNames) {
  auto p = ParseText(std::string(kMinimalInventory) + R"(  - name: w1
    address: 198.18.0.12
    os: ubuntu-22.04
    roles: [worker]
)");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 11, 11, "duplicate node name 'w1' (first at line 7)"));
}

TEST(InventoryErrors, DuplicateAddressAndPort) {
  auto p = ParseText(std::string(kMinimalInventory) + R"(  - name: w2
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
)");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 12, 14,
                            "duplicate address 198.18.0.11:22: node 'w1' (line 7) has it too"));
}

TEST(InventoryErrors, SharedAddressWithDifferentPortsIsFine) {
  auto p = ParseText(std::string(kMinimalInventory) + R"(  - name: w2
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
    ssh: {port: 2202}
)");
  EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
}

TEST(InventoryErrors, DuplicateIbAddress) {
  auto p = ParseText(R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: w1, address: 198.18.0.11, ib_address: 10.10.0.1, os: ubuntu-22.04, roles: [worker]}
  - {name: w2, address: 198.18.0.12, ib_address: 10.10.0.1, os: ubuntu-22.04, roles: [worker]}
)");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 5, 50, "duplicate ib_address 10.10.0.1"));
}

TEST(InventoryErrors, NoMaster) {
  auto p = ParseText(R"(cluster: lab
nodes:
  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}
)");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 2, 1, "no node has role 'master'"));
}

TEST(InventoryErrors, SecondMaster) {
  auto p = ParseText(std::string(kMinimalInventory) +
                     "  - {name: m2, address: 198.18.0.9, os: ubuntu-22.04, roles: [master]}\n");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 11, 12, "node 'm2' is a second master"));
}

TEST(InventoryErrors, NfsServerNamingUnknownNode) {
  auto p = ParseText(WithTop("nfs:\n  server: w2\n  exports: [{path: /data}]\n"));
  EXPECT_TRUE(
      HasDiagnostic(p.diagnostics, 3, 11, "nfs.server 'w2' is not a node (did you mean 'w1'?)"));
}

TEST(InventoryErrors, NfsMountOfUnexportedPath) {
  auto p = ParseText(WithTop(
      "nfs:\n  exports: [{path: /data}]\n  mounts:\n    - {export: /dta, path: /mnt/data}\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 5, 16,
                            "mount of '/dta', which nfs.exports does not export (did you mean "
                            "'/data'?)"));
}

TEST(InventoryErrors, NfsPathsMustBeAbsolute) {
  auto p = ParseText(WithTop("nfs:\n  exports: [{path: data}]\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 20,
                            "invalid NFS export path 'data': expected an absolute path"));
}

TEST(InventoryErrors, NfsClientsUnderivable) {
  auto p = ParseText(R"(cluster: lab
nfs:
  exports:
    - path: /data
nodes:
  - {name: m1, address: master.lab, os: ubuntu-22.04, roles: [master]}
)");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 7, "cannot tell who may mount '/data'"));
}

TEST(InventoryErrors, SlurmPartitionNamingUnknownNode) {
  auto p = ParseText(WithTop(R"(orchestrator: slurm
slurm:
  partitions:
    - name: gpu
      nodes: [w1, w9, m1]
)"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 6, 19,
                            "partition 'gpu' names 'w9', which is not a node (did you mean "
                            "'w1'?)"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 6, 23, "names 'm1', which is not a worker"));
}

TEST(InventoryErrors, SlurmSecondDefaultPartition) {
  auto p = ParseText(WithTop(R"(orchestrator: slurm
slurm:
  partitions:
    - {name: a, default: true}
    - {name: b, default: true}
)"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 6, 7, "partition 'b' is a second default partition"));
}

TEST(InventoryErrors, SlurmNeedsWorkers) {
  auto p = ParseText(R"(cluster: lab
orchestrator: slurm
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
)");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 2, 15,
                            "orchestrator slurm needs at least one node with role 'worker'"));
}

TEST(InventoryErrors, UnknownOrchestrator) {
  auto p = ParseText(WithTop("orchestrator: kubernets\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 2, 15,
                            "unknown orchestrator 'kubernets' (did you mean 'kubernetes'?)"));
}

TEST(InventoryErrors, UnknownOsListsKnownOnes) {
  std::string text = kMinimalInventory;
  text.replace(text.rfind("ubuntu-22.04"), 12, "slackware-15");
  auto p = ParseText(text);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 9, 9,
                            "unknown OS 'slackware-15'; known: ubuntu-20.04, ubuntu-22.04, "
                            "ubuntu-24.04, debian-12, rocky-8, rocky-9, rhel-8, rhel-9, "
                            "almalinux-8, almalinux-9, centos-stream-8, centos-stream-9, auto"));
}

TEST(InventoryErrors, UnknownRole) {
  std::string text = kMinimalInventory;
  text.replace(text.find("[worker]"), 8, "[wroker]");
  auto p = ParseText(text);
  EXPECT_TRUE(
      HasDiagnostic(p.diagnostics, 10, 13, "unknown role 'wroker' (did you mean 'worker'?)"));
}

TEST(InventoryErrors, InvalidAddresses) {
  auto p = ParseText(R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.300
    ib_address: not_a_host
    os: ubuntu-22.04
    roles: [master]
)");
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 14, "invalid address '198.18.0.300'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 5, 17, "invalid address 'not_a_host'"));
}

TEST(InventoryErrors, InvalidNodeName) {
  std::string text = kMinimalInventory;
  text.replace(text.find("name: w1"), 8, "name: w_1");
  auto p = ParseText(text);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 7, 11, "invalid node name 'w_1'"));
}

TEST(InventoryErrors, InvalidCidr) {
  auto p = ParseText(WithTop("network:\n  subnet: 198.18.0.0\n  pod_cidr: 10.244.0.0/40\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 11, "invalid CIDR '198.18.0.0'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 13, "invalid CIDR '10.244.0.0/40'"));
}

TEST(InventoryErrors, PortOutOfRange) {
  std::string text = kMinimalInventory;
  text += "    ssh: {port: 0}\n";
  auto p = ParseText(WithTop("ssh:\n  port: 70000\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 9, "70000 is out of range: expected 1 to 65535"));
  auto q = ParseText(text);
  EXPECT_TRUE(HasDiagnostic(q.diagnostics, 11, 17, "0 is out of range: expected 1 to 65535"));
}

TEST(InventoryErrors, InvalidJumpHost) {
  auto p = ParseText(WithTop("ssh:\n  jump_host: admin@bastion:99999\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 14, "invalid jump_host 'admin@bastion:99999'"));
}

TEST(InventoryErrors, CudaTheDriverCannotRun) {
  auto p = ParseText(WithTop("versions:\n  driver_branch: \"470\"\n  cuda: \"12.4\"\n"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 9, "driver branch 470 cannot run CUDA 12.4"));
}

TEST(InventoryErrors, CudaOnlyThroughMinorVersionCompatIsAWarning) {
  auto p = ParseText(WithTop("versions:\n  driver_branch: \"535\"\n  cuda: \"12.4\"\n"));
  EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 9, "only through minor-version compatibility",
                            Severity::kWarning));
}

TEST(InventoryErrors, CudaCheckPointsAtTheBranchWhenCudaIsDefaulted) {
  auto p = ParseText(WithTop("versions:\n  driver_branch: \"525\"\n"));
  EXPECT_TRUE(
      HasDiagnostic(p.diagnostics, 3, 18, "driver branch 525 runs CUDA 12.4", Severity::kWarning));
}

TEST(InventoryErrors, CudnnMajorMustBeBuiltForTheCuda) {
  auto eight =
      ParseText(WithTop("versions:\n  cuda: \"13.0\"\n  driver_branch: \"580\"\n"
                        "  cudnn: \"8.9\"\n"));
  EXPECT_FALSE(eight.inventory);
  EXPECT_TRUE(HasDiagnostic(eight.diagnostics, 5, 10,
                            "versions.cudnn 8.9: cuDNN 8 is built for CUDA 11 and 12 only, and "
                            "versions.cuda is 13.0; use cuDNN 9 (e.g. 9.13)"))
      << eight.diagnostics.Format();
  auto seven = ParseText(WithTop("versions:\n  cudnn: \"7.6\"\n"));
  EXPECT_TRUE(HasDiagnostic(seven.diagnostics, 3, 10, "versions.cudnn 7.6: NVIDIA's repositories"))
      << seven.diagnostics.Format();
  auto fine = ParseText(WithTop("versions:\n  cuda: \"12.4\"\n  cudnn: \"8.9\"\n"));
  EXPECT_TRUE(fine.inventory) << fine.diagnostics.Format();
}

TEST(InventoryErrors, CniIsOneTheCatalogInstalls) {
  auto cilium = ParseText(WithTop("versions:\n  cni: cilium\n"));
  EXPECT_FALSE(cilium.inventory);
  EXPECT_TRUE(HasDiagnostic(cilium.diagnostics, 3, 8,
                            "invalid CNI 'cilium': gpuctl installs the flannel or the Calico pod "
                            "network (k8s.cni) and no other; use \"flannel\" or \"calico\""))
      << cilium.diagnostics.Format();
  for (const char* cni : {"flannel", "calico"}) {
    auto fine = ParseText(WithTop(std::string("versions:\n  cni: ") + cni + "\n"));
    EXPECT_TRUE(fine.inventory) << cni << ": " << fine.diagnostics.Format();
  }
}

TEST(InventoryErrors, UnknownCudaVersion) {
  auto p = ParseText(WithTop("versions:\n  cuda: \"12.7\"\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 9, "unknown CUDA version '12.7'; known: 11.0"));
}

TEST(InventoryErrors, InvalidDriverBranch) {
  auto p = ParseText(WithTop("versions:\n  driver_branch: r550\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 18, "invalid driver branch 'r550'"));
  EXPECT_EQ(p.diagnostics.ErrorCount(), 1U) << p.diagnostics.Format();
}

TEST(InventoryErrors, InvalidSlurmVersion) {
  // "23" would match 23.02 and 23.11 alike; Slurm's series are two numbers.
  for (const char* bad : {"\"23\"", "latest", "\"23.02-1\""}) {
    auto p = ParseText(WithTop(std::string("versions:\n  slurm: ") + bad + "\n"));
    EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 10, "invalid Slurm version")) << bad;
  }
  for (const char* good : {"\"23.02\"", "\"23.02.7\""}) {
    auto p = ParseText(WithTop(std::string("versions:\n  slurm: ") + good + "\n"));
    EXPECT_EQ(p.diagnostics.ErrorCount(), 0U) << p.diagnostics.Format();
  }
}

TEST(InventoryErrors, InvalidNtpServer) {
  auto p = ParseText(WithTop("network:\n  ntp_servers: [ntp1.example.org, \"10.0.0.5 iburst\"]\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 35, "invalid NTP server '10.0.0.5 iburst'"))
      << p.diagnostics.Format();
  EXPECT_EQ(p.diagnostics.ErrorCount(), 1U) << p.diagnostics.Format();
}

TEST(InventoryErrors, InlineSecretsAreRejected) {
  auto p = ParseText(WithTop(R"(token: abc123
ssh:
  become_password: hunter2
  password: hunter2
slurm:
  munge_key: c2VjcmV0
)"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 2, 1, "'token' would put a secret in the inventory"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 4, 3, "name the variable with 'become_password_env'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 5, 3, "name the variable with 'become_password_env'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 7, 3, "name the variable with 'munge_key_env'"));
  EXPECT_THAT(p.diagnostics.Format(), Not(HasSubstr("hunter2")));
}

TEST(InventoryErrors, SecretPastedIntoAnEnvKeyIsNotEchoed) {
  auto p = ParseText(WithTop("ssh:\n  become_password_env: \"correct horse battery\"\n"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 3, 24,
                            "'become_password_env' must name an environment variable"));
  EXPECT_THAT(p.diagnostics.Format(), Not(HasSubstr("horse")));
}

TEST(InventoryErrors, EveryErrorIsReportedNotJustTheFirst) {
  auto p = ParseText(R"(cluster: lab
ssh: {port: 70000}
versions: {cuda: "9.0"}
network: {pod_cidr: nope}
nodes:
  - {name: a, address: 1.2.3.4, os: centos-7, roles: [master]}
  - {name: a, address: 1.2.3.999, os: ubuntu-22.04, roles: [wroker]}
)");
  EXPECT_EQ(p.diagnostics.ErrorCount(), 7U) << p.diagnostics.Format();
  // In file order, whichever pass found them.
  int last_line = 0;
  for (const auto& d : p.diagnostics.All()) {
    EXPECT_GE(d.where.line, last_line);
    last_line = d.where.line;
  }
}

}  // namespace
}  // namespace gpuctl
