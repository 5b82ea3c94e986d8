// The container steps (playbooks/40-containers.yaml) on real nodes of both
// families: the real containerd 1.6 (Debian's package on Ubuntu, the same
// binaries as containerd.io on Rocky) converges to SystemdCgroup = true with
// the nvidia runtime, and a GPU Operator's later edits of config.toml survive
// every following apply, even one that has to fix a key gpuctl owns. gpuctl
// reaches the workers as cloud images are reached (up --sudo-users): worker1
// as `ubuntu` with NOPASSWD sudo, worker2 as `rocky` whose real sudo asks for
// the password, so the OS (os.modules), GPU (driver) and container layers
// all go through sudo on both families.
#include <fstream>

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

// worker1 is Ubuntu (apt) and worker2 Rocky (dnf) in `--profile mixed`.
const std::vector<std::string> kNodesChecked = {"worker1", "worker2"};

// What the GPU Operator's toolkit container does to a node's containerd: its
// own nvidia runtime binary, an extra runtime, nvidia as the default, then a
// restart. (The lab has no Kubernetes operator; this is its file edit.)
constexpr const char* kOperatorEdit = R"(set -e
cfg=/etc/containerd/config.toml
nvidia-ctk runtime configure --runtime=containerd --set-as-default 2>/dev/null
sed -i 's#"/usr/bin/nvidia-container-runtime"#"/usr/local/nvidia/toolkit/nvidia-container-runtime"#' "$cfg"
cat >>"$cfg" <<'EOF'

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi.options]
  BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi"
  SystemdCgroup = true
EOF
systemctl restart containerd
)";

// Reads KEY of TABLE (quotes dropped) in containerd's effective configuration.
constexpr const char* kDumpGet = R"(containerd config dump | awk -v t="$T" -v k="$K" '
  /^[ \t]*\[/ { h = $0; gsub(/[][ \t"]/, "", h); cur = h; next }
  cur == t && $1 == k { sub(/^[^=]*=[ \t]*/, ""); gsub(/"/, ""); print; exit }')";

class ContainersLabTest : public test::LabCase {
 protected:
  std::string Prefix() const override { return "c"; }
  std::string Shape() const override { return "--profile mixed --sudo-users"; }
  std::string Only() const override { return "containers"; }

  std::string Live(const std::string& node, const std::string& table,
                   const std::string& key) const {
    const std::string t = "plugins.io.containerd.grpc.v1.cri.containerd" + table;
    return Trim(
        lab_->Ssh(node, "T=" + Quote(t) + "; K=" + Quote(key) + "; " + std::string(kDumpGet)).out);
  }
  std::string Sha(const std::string& node) const {
    return Trim(lab_->Ssh(node, "sha256sum </etc/containerd/config.toml").out);
  }
};

TEST_F(ContainersLabTest, ConvergesOnBothFamiliesAndKeepsTheGpuOperatorsEdits) {
  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("first"));
  ASSERT_EQ(apply.status, 0) << apply.out;

  const std::map<std::string, std::string> login = {{"worker1", "ubuntu"}, {"worker2", "rocky"}};
  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node + " (" + lab_->Node(node).os + ")");
    // Through sudo: sshd let the login user in, sudo ran gpuctl's shells as
    // root for it (the node's journal), and what the steps wrote is root's.
    const std::string journal = "journalctl -q --no-pager -o cat";
    EXPECT_NE(Trim(lab_->Ssh(node, journal + " _COMM=sshd | grep -c 'Accepted publickey for " +
                                       login.at(node) + " '")
                       .out),
              "0");
    EXPECT_NE(Trim(lab_->Ssh(node, journal + " _COMM=sudo | grep -cE '^ *" + login.at(node) +
                                       " : .*USER=root ; COMMAND=/usr/bin/sh '")
                       .out),
              "0");
    EXPECT_EQ(Trim(lab_->Ssh(node,
                             "stat -c %U:%G /etc/containerd/config.toml "
                             "/etc/modules-load.d/gpuctl-k8s.conf | sort -u")
                       .out),
              "root:root");
    EXPECT_EQ(Trim(lab_->Ssh(node, "systemctl is-active containerd").out), "active");
    EXPECT_EQ(Trim(lab_->Ssh(node, "systemctl is-enabled containerd").out), "enabled");
    // The real daemon runs with its CRI plugin loaded.
    EXPECT_EQ(Trim(lab_->Ssh(node, "ctr plugins ls | awk '$2 == \"cri\" { print $4 }'").out), "ok");
    EXPECT_EQ(Live(node, ".runtimes.runc.options", "SystemdCgroup"), "true");
    EXPECT_EQ(Live(node, ".runtimes.nvidia.options", "BinaryName"),
              "/usr/bin/nvidia-container-runtime");
  }
  // Ubuntu: Debian's own config.toml was edited, not replaced (its CNI path
  // is still there); Rocky: containerd.io's placeholder was set aside.
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "grep -c /usr/lib/cni /etc/containerd/config.toml").out),
            "1");
  EXPECT_EQ(lab_->Ssh("worker2",
                      "grep -q 'disabled_plugins = \\[\"cri\"\\]' "
                      "/etc/containerd/config.toml.gpuctl-orig")
                .status,
            0);

  // The operator arrives and rewrites config.toml its way.
  std::map<std::string, std::string> operator_sha;
  for (const std::string& node : kNodesChecked) {
    ASSERT_EQ(lab_->Ssh(node, kOperatorEdit).status, 0) << node;
    operator_sha[node] = Sha(node);
  }
  const Result second = Gpuctl("apply --yes --run-dir " + RunDir("second"));
  EXPECT_EQ(second.status, 0) << second.out;
  EXPECT_EQ(ChangesIn(RunDir("second")), 0) << second.out;
  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node);
    EXPECT_EQ(Sha(node), operator_sha[node]);
    EXPECT_EQ(Live(node, "", "default_runtime_name"), "nvidia");
    EXPECT_EQ(Live(node, ".runtimes.nvidia.options", "BinaryName"),
              "/usr/local/nvidia/toolkit/nvidia-container-runtime");
  }

  // Someone turns runc's SystemdCgroup off: gpuctl fixes that one line and
  // nothing else, so the file is the operator's again, byte for byte.
  for (const std::string& node : kNodesChecked) {
    ASSERT_EQ(lab_->Ssh(node,
                        "sed -i '/runtimes.runc.options\\]/,/^ *\\[/ "
                        "s/SystemdCgroup = true/SystemdCgroup = false/' "
                        "/etc/containerd/config.toml && systemctl restart containerd")
                  .status,
              0);
    ASSERT_NE(Sha(node), operator_sha[node]) << node << ": the test's edit did nothing";
  }
  const Result check = Gpuctl("check");
  EXPECT_NE(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("runc's SystemdCgroup is false"), std::string::npos) << check.out;

  const Result third = Gpuctl("apply --yes --run-dir " + RunDir("third"));
  EXPECT_EQ(third.status, 0) << third.out;
  EXPECT_EQ(ChangesIn(RunDir("third")), 2) << third.out;  // containers.containerd, twice
  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node);
    EXPECT_EQ(Sha(node), operator_sha[node]);
    EXPECT_EQ(Live(node, ".runtimes.runc.options", "SystemdCgroup"), "true");
    EXPECT_EQ(Live(node, ".runtimes.nvidia-cdi.options", "BinaryName"),
              "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi");
  }
  const Result green = Gpuctl("check");
  EXPECT_EQ(green.status, 0) << green.out;

  // policy.docker: the Docker stand-in beside containerd, nvidia runtime
  // loaded by the running daemon, and again nothing to do on a second run.
  const std::string docker_inventory = (runs_ / "docker.yaml").string();
  std::ofstream(docker_inventory) << test::ReadFile(lab_->Env("LAB_INVENTORY"))
                                  << "policy:\n  docker: true\n";
  const auto with_docker = [&](const std::string& args) {
    return Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " " + args + " " +
                 Quote(docker_inventory) + " 2>&1 </dev/null");
  };
  // On apt, Docker's docker-ce needs Docker's containerd.io, which conflicts
  // with Ubuntu's containerd: worker1's containerd is replaced first, its
  // config.toml (the operator's edits and all) kept byte for byte.
  const Result docker_plan = with_docker("plan");
  EXPECT_NE(docker_plan.out.find("Ubuntu's containerd is installed: Docker needs Docker's "
                                 "containerd.io in its place (they conflict)"),
            std::string::npos)
      << docker_plan.out;
  const std::string apt_config = Sha("worker1");
  const Result docker = with_docker("apply --yes --run-dir " + RunDir("docker"));
  EXPECT_EQ(docker.status, 0) << docker.out;
  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node);
    EXPECT_EQ(Trim(lab_->Ssh(node, "systemctl is-enabled docker").out), "enabled");
    EXPECT_NE(lab_->Ssh(node, "docker info | grep '^ *Runtimes:'").out.find(" nvidia"),
              std::string::npos);
    EXPECT_EQ(Live(node, ".runtimes.runc.options", "SystemdCgroup"), "true");
  }
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "dpkg-query -W -f='${Status}' containerd.io").out),
            "install ok installed");
  EXPECT_NE(Trim(lab_->Ssh("worker1", "dpkg-query -W -f='${Status}' containerd").out),
            "install ok installed");
  EXPECT_EQ(Sha("worker1"), apt_config);
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "grep -c cri /etc/containerd/config.toml.dpkg-dist").out),
            "1");
  const Result docker_again = with_docker("apply --yes --run-dir " + RunDir("docker-again"));
  EXPECT_EQ(docker_again.status, 0) << docker_again.out;
  EXPECT_EQ(ChangesIn(RunDir("docker-again")), 0) << docker_again.out;
  // The runbooks' own test of a Docker GPU node (check --deep): a CUDA
  // container given the GPUs by `--gpus all` lists every one of the node's.
  const std::string deep_docker = "--only validate.docker-gpu check --deep";
  const Result deep = with_docker(deep_docker);
  EXPECT_EQ(deep.status, 0) << deep.out;
  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node);
    const std::string gpus = Trim(lab_->Ssh(node, "nvidia-smi -L | grep -c '^GPU '").out);
    EXPECT_NE(
        deep.out.find("docker run --gpus all: nvidia-smi -L lists " + gpus + " GPUs, GPU 0: "),
        std::string::npos)
        << deep.out;
  }
  // dockerd started while the toolkit's hook was not there (installed after
  // Docker): it has no device driver for --gpus until it restarts.
  const std::string hook = "/usr/bin/nvidia-container-runtime-hook";
  ASSERT_EQ(lab_->Ssh("worker2", "mv " + hook +
                                     " /root/hook && systemctl restart docker && mv "
                                     "/root/hook " +
                                     hook)
                .status,
            0);
  const Result no_driver = with_docker(deep_docker);
  EXPECT_EQ(no_driver.status, 2) << no_driver.out;
  EXPECT_NE(no_driver.out.find("could not select device driver \"\" with capabilities: [[gpu]] "
                               "(dockerd started without the NVIDIA container toolkit's hook: "
                               "restart docker)"),
            std::string::npos)
      << no_driver.out;
  ASSERT_EQ(lab_->Ssh("worker2", "systemctl restart docker").status, 0);
  EXPECT_EQ(with_docker(deep_docker).status, 0);
  // Docker off again in the inventory: containerd.io stays (Ubuntu's would
  // take Docker with it), and there is nothing to change.
  const Result without = Gpuctl("plan");
  EXPECT_EQ(without.status, 0) << without.out;
}

}  // namespace
}  // namespace gpuctl
