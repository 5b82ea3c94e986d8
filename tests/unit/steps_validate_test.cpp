// The deep validation steps (playbooks/90-validate.yaml) read the tools as
// the real ones answer: all_reduce_perf's report (tests/fixtures/nccl-tests/),
// ib_send_bw's (tests/fixtures/perftest/), and a pod's `nvidia-smi -L` log (the
// real H100 capture). mpirun, ssh and kubectl are stubs that print them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

// A master and `workers` GPU workers w1..wN with one IB port each, plus the
// given `validation:` block (may be empty).
std::string ValidateInventory(int workers, const std::string& validation) {
  std::string text = "cluster: t\norchestrator: kubernetes\n" + validation +
                     "nodes:\n  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, "
                     "roles: [master]}\n";
  for (int i = 1; i <= workers; ++i) {
    const std::string n = std::to_string(i);
    text += "  - name: w" + n + "\n    address: 198.18.0.1" + n +
            "\n    os: " + (i % 2 == 0 ? "rocky-9" : "ubuntu-22.04") +
            "\n    roles: [worker]\n"
            "    hardware:\n      gpus: {model: NVIDIA H100 80GB HBM3, count: 8}\n"
            "      ib: [{device: mlx5_0, port: 1, rate: 200}]\n";
  }
  return text;
}

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool ValidateHas(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --- validate.nccl -----------------------------------------------------------

constexpr const char* kTwoH100Nodes = "nccl-tests/all_reduce_perf_2x8_h100.txt";

// validate.nccl on two GPU workers with `validation` in the inventory, where
// mpirun prints `fixture` and exits `status`; `args` gets mpirun's arguments.
testing::StepRun Nccl(const std::string& validation, const std::string& fixture, int status,
                      std::string* args = nullptr) {
  StepHarness h(ValidateInventory(2, validation));
  h.Stub("mpirun", "echo \"$*\" >\"$HOME/mpirun.args\"\ncat '" + StepHarness::Fixture(fixture) +
                       "'\nexit " + std::to_string(status));
  auto run = h.Probe("validate.nccl", "m");
  if (args != nullptr) *args = ReadAll(h.dir() / "mpirun.args");
  return run;
}

TEST(NcclValidate, ReportsBusBandwidthAtTheLargestSizeAndPassesAboveTheMinimum) {
  std::string args;
  const auto run = Nccl("validation: {nccl_min_busbw_gbps: 300}\n", kTwoH100Nodes, 0, &args);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "all_reduce_perf 2 nodes x 8 GPUs: busbw 369.12 GB/s at 8G (min 300)\n");
  EXPECT_TRUE(ValidateHas(args, "-np 2 -H w1,w2 ")) << args;
  EXPECT_TRUE(ValidateHas(args, "all_reduce_perf -b 8 -e 8G -f 2 -g 8")) << args;
}

TEST(NcclValidate, FailsBelowTheMinimum) {
  const auto run = Nccl("validation: {nccl_min_busbw_gbps: 400}\n", kTwoH100Nodes, 0);
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "all_reduce_perf 2 nodes x 8 GPUs: busbw 369.12 GB/s at 8G, below the minimum 400 "
            "GB/s\n");
}

TEST(NcclValidate, WithoutThresholdReportsAndPasses) {
  const auto run = Nccl("", kTwoH100Nodes, 0);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_TRUE(ValidateHas(run.out, "busbw 369.12 GB/s at 8G (no threshold)")) << run.out;
}

TEST(NcclValidate, AFailedRunNamesTheToolsError) {
  const auto run = Nccl("validation: {nccl_min_busbw_gbps: 300}\n",
                        "nccl-tests/all_reduce_perf_cuda_failure.txt", 1);
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "all_reduce_perf 2 nodes x 8 GPUs failed (exit 1): dgx-a02: Test CUDA failure "
            "common.cu:892 'CUDA driver version is insufficient for CUDA runtime version'\n");
}

// A worker running MIG instances is left out of the NCCL run and named: one
// CUDA process sees a single MIG device.
TEST(NcclValidate, AWorkerRunningMigIsLeftOutAndNamed) {
  std::string inventory = ValidateInventory(3, "");
  const std::string w2 =
      "count: 8}\n      ib: [{device: mlx5_0, port: 1, rate: 200}]\n  - name: w3";
  ASSERT_NE(inventory.find(w2), std::string::npos);
  inventory.replace(inventory.find(w2), 9,
                    "count: 8, mig: [{gpus: \"0\", instances: {1g.10gb: 7}}]}");
  StepHarness h(inventory);
  h.Stub("mpirun",
         "echo \"$*\" >\"$HOME/mpirun.args\"\ncat '" + StepHarness::Fixture(kTwoH100Nodes) + "'");
  const auto run = h.Probe("validate.nccl", "m");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out,
            "all_reduce_perf 2 nodes x 8 GPUs (not on w2: MIG): busbw 369.12 GB/s at 8G (no "
            "threshold)\n");
  EXPECT_TRUE(ValidateHas(ReadAll(h.dir() / "mpirun.args"), "-np 2 -H w1,w3 "));
}

TEST(NcclValidate, OneGpuWorkerRunsOnItsOwnOverSsh) {
  StepHarness h(ValidateInventory(1, ""));
  h.Stub("ssh",
         "echo \"$*\" >\"$HOME/ssh.args\"\ncat '" + StepHarness::Fixture(kTwoH100Nodes) + "'");
  const auto run = h.Probe("validate.nccl", "m");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_TRUE(ValidateHas(run.out, "all_reduce_perf 1 node x 8 GPUs: busbw 369.12")) << run.out;
  EXPECT_TRUE(
      ValidateHas(ReadAll(h.dir() / "ssh.args"), "w1 all_reduce_perf -b 8 -e 8G -f 2 -g 8"));
}

TEST(NcclValidate, NoGpuWorkersIsNothingToRun) {
  StepHarness h(ValidateInventory(0, ""));
  const auto run = h.Probe("validate.nccl", "m");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.out, "all_reduce_perf: no GPU workers in the inventory, nothing to run\n");
}

// --- validate.ib-bw ----------------------------------------------------------

// ssh as the pair test sees it: the server side (the command ends in
// --report_gbits) prints a PID and the server sample, and stays until its
// client has succeeded or it is killed; a client prints `client` and exits
// `client_status`, or on `slow_host` prints `slow` (to stderr when it fails).
// Every call is appended to $HOME/ssh.log.
void Ssh(StepHarness& h, const std::string& client, int client_status = 0,
         const std::string& slow_host = "", const std::string& slow = "") {
  const std::string server = StepHarness::Fixture("perftest/ib_send_bw_server_hdr.txt");
  const std::string other = StepHarness::Fixture(slow.empty() ? client : slow);
  h.Stub("ssh",
         "while [ \"$1\" = -o ]; do shift 2; done\nhost=$1; shift\n"
         "echo \"$host: $*\" >>\"$HOME/ssh.log\"\n"
         "case \"$*\" in\n"
         "  kill\\ *) touch \"$HOME/killed\" ;;\n"
         "  *'--report_gbits') echo 4242; cat '" +
             server +
             "'\n"
             "    n=0; until [ -e \"$HOME/client-ok\" ] || [ -e \"$HOME/killed\" ] || [ $n -ge 200 "
             "]; do\n"
             "      n=$((n + 1)); sleep 0.05; done\n"
             "    rm -f \"$HOME/client-ok\" \"$HOME/killed\" ;;\n"
             "  *) if [ \"$host\" = '" +
             slow_host + "' ]; then\n" + "      if [ " + std::to_string(client_status) +
             " -ne 0 ]; then cat '" + other + "' >&2; exit " + std::to_string(client_status) +
             "; fi\n      cat '" + other + "'\n    else cat '" + StepHarness::Fixture(client) +
             "'\n    fi\n    touch \"$HOME/client-ok\" ;;\nesac");
}

TEST(IbValidate, PairsConsecutiveWorkersAndTheOddOneWithTheFirst) {
  StepHarness h(ValidateInventory(3, "validation: {ib_min_bw_gbps: 150}\n"));
  Ssh(h, "perftest/ib_send_bw_client_hdr.txt");
  const auto run = h.Probe("validate.ib-bw", "m");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out,
            "ib_send_bw: w1<->w2 196.52 Gb/s (mlx5_0) w3<->w1 196.52 Gb/s (mlx5_0) (min 150)\n");
  const std::string log = ReadAll(h.dir() / "ssh.log");
  EXPECT_TRUE(ValidateHas(
      log, "w1: echo $$; exec timeout 60 ib_send_bw -d mlx5_0 -i 1 -F --report_gbits\n"))
      << log;
  EXPECT_TRUE(ValidateHas(log, "w2: ib_send_bw -d mlx5_0 -i 1 -F --report_gbits w1\n")) << log;
  EXPECT_TRUE(ValidateHas(log, "w3: echo $$; exec timeout 60 ib_send_bw")) << log;
  EXPECT_TRUE(ValidateHas(log, "w1: ib_send_bw -d mlx5_0 -i 1 -F --report_gbits w3\n")) << log;
}

TEST(IbValidate, FailsOnTheFirstPairBelowTheMinimum) {
  StepHarness h(ValidateInventory(4, "validation: {ib_min_bw_gbps: 150}\n"));
  Ssh(h, "perftest/ib_send_bw_client_hdr.txt", 0, "w4", "perftest/ib_send_bw_client_hdr100.txt");
  const auto run = h.Probe("validate.ib-bw", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "ib_send_bw: w1<->w2 196.52 Gb/s (mlx5_0) w3<->w4 97.61 Gb/s (mlx5_0), below the "
            "minimum 150 Gb/s\n");
}

TEST(IbValidate, ADownPortFailsWithPerftestsMessage) {
  StepHarness h(ValidateInventory(2, ""));
  Ssh(h, "perftest/ib_send_bw_client_hdr.txt", 1, "w2", "perftest/ib_send_bw_port_down.txt");
  const auto run = h.Probe("validate.ib-bw", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "ib_send_bw w1<->w2 mlx5_0 failed on w2: Port number 1 state is Down\n");
  // The waiting server on w1 was stopped by its PID.
  EXPECT_TRUE(ValidateHas(ReadAll(h.dir() / "ssh.log"), "w1: kill 4242\n"));
}

TEST(IbValidate, WithoutThresholdReportsAndPasses) {
  StepHarness h(ValidateInventory(2, ""));
  Ssh(h, "perftest/ib_send_bw_client_hdr.txt");
  const auto run = h.Probe("validate.ib-bw", "m");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "ib_send_bw: w1<->w2 196.52 Gb/s (mlx5_0) (no threshold)\n");
}

// --- validate.gpu-pod --------------------------------------------------------

// kubectl: the pod ends in `phase` on w1; its log is `log` (a fixture or "").
void Kubectl(StepHarness& h, const std::string& phase, const std::string& log) {
  h.Stub("sleep", "exit 0");  // the probe polls the phase; no need to wait here
  h.Stub("kubectl",
         "echo \"$*\" >>\"$HOME/kubectl.log\"\ncase \"$*\" in\n"
         "  apply*) cat >\"$HOME/pod.yaml\"; echo 'pod/gpuctl-validate-gpu created' ;;\n"
         "  *status.phase*) printf " +
             phase +
             " ;;\n"
             "  *spec.nodeName*) printf w1 ;;\n"
             "  *PodScheduled*) printf '0/3 nodes are available: 1 Insufficient nvidia.com/gpu.' "
             ";;\n  logs*) " +
             (log.empty() ? std::string("true") : "cat '" + StepHarness::Fixture(log) + "'") +
             " ;;\nesac");
}

TEST(GpuPodValidate, PassesWhenThePodListsAGpu) {
  StepHarness h(ValidateInventory(1, ""));
  Kubectl(h, "Succeeded", "nvidia-smi/h100-80gb-hbm3/L.txt");
  const auto run = h.Probe("validate.gpu-pod", "m");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "GPU pod on w1: GPU 0: NVIDIA H100 80GB HBM3\n");
  const std::string pod = ReadAll(h.dir() / "pod.yaml");
  EXPECT_TRUE(ValidateHas(pod, "nvidia.com/gpu: 1")) << pod;
  EXPECT_TRUE(ValidateHas(pod, "image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04\n")) << pod;
  EXPECT_TRUE(ValidateHas(pod, "restartPolicy: Never")) << pod;
  EXPECT_TRUE(
      ValidateHas(ReadAll(h.dir() / "kubectl.log"), "delete pod gpuctl-validate-gpu -n default"));
}

TEST(GpuPodValidate, ThePodRunsTheInventorysCudaImage) {
  StepHarness h(ValidateInventory(
      1, "validation: {cuda_image: \"registry.site:5000/nvidia/cuda:12.4.1-base-ubuntu22.04\"}\n"));
  Kubectl(h, "Succeeded", "nvidia-smi/h100-80gb-hbm3/L.txt");
  ASSERT_EQ(h.Probe("validate.gpu-pod", "m").status, 0);
  EXPECT_TRUE(ValidateHas(ReadAll(h.dir() / "pod.yaml"),
                          "image: registry.site:5000/nvidia/cuda:12.4.1-base-ubuntu22.04\n"));
}

TEST(GpuPodValidate, APendingPodReportsTheSchedulersMessage) {
  StepHarness h(ValidateInventory(1, ""));
  Kubectl(h, "Pending", "");
  const auto run = h.Probe("validate.gpu-pod", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "GPU pod still Pending after 180 s: 0/3 nodes are available: 1 Insufficient "
            "nvidia.com/gpu.\n");
}

TEST(GpuPodValidate, ASucceededPodWithoutGpusFails) {
  StepHarness h(ValidateInventory(1, ""));
  Kubectl(h, "Succeeded", "");
  const auto run = h.Probe("validate.gpu-pod", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(ValidateHas(run.out, "GPU pod on w1 ran, but nvidia-smi -L listed no GPU"))
      << run.out;
}

// --- validate.docker-gpu -----------------------------------------------------

// One Docker GPU worker with `gpus` H100s; docker prints `fixture` (the real
// CLI's output, tests/fixtures/docker/) and exits `status`.
testing::StepRun DockerGpu(int gpus, const std::string& fixture, int status,
                           std::string* args = nullptr, const std::string& top = "") {
  StepHarness h(
      "cluster: t\norchestrator: kubernetes\npolicy: {docker: true}\n" + top +
      "nodes:\n"
      "  - {name: m, address: 198.18.0.1, os: ubuntu-22.04, roles: [master]}\n"
      "  - name: w1\n    address: 198.18.0.11\n    os: ubuntu-22.04\n    roles: [worker]\n"
      "    hardware:\n      gpus: {model: NVIDIA H100 80GB HBM3, count: " +
      std::to_string(gpus) + "}\n");
  h.Stub("docker", "echo \"$*\" >\"$HOME/docker.args\"\ncat '" +
                       StepHarness::Fixture("docker/" + fixture) + "'\nexit " +
                       std::to_string(status));
  auto run = h.Probe("validate.docker-gpu", "w1");
  if (args != nullptr) *args = ReadAll(h.dir() / "docker.args");
  return run;
}

TEST(DockerGpuValidate, PassesWhenTheContainerListsEveryGpuOfTheNode) {
  std::string args;
  const auto run = DockerGpu(1, "run-gpus-h100-pull.txt", 0, &args);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out,
            "docker run --gpus all: nvidia-smi -L lists 1 GPUs, GPU 0: NVIDIA H100 80GB HBM3\n");
  EXPECT_EQ(args,
            "run --rm --gpus all nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi -L\n");
}

TEST(DockerGpuValidate, RunsTheInventorysCudaImage) {
  std::string args;
  const auto run = DockerGpu(1, "run-gpus-h100-pull.txt", 0, &args,
                             "validation: {cuda_image: \"localhost:5000/cuda:12.4.1-base\"}\n");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(args, "run --rm --gpus all localhost:5000/cuda:12.4.1-base nvidia-smi -L\n");
}

TEST(DockerGpuValidate, FewerGpusInTheContainerThanTheNodeHasFails) {
  const auto run = DockerGpu(8, "run-gpus-h100-pull.txt", 0);
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "docker run --gpus all: nvidia-smi -L lists 1 of 8 GPUs\n");
}

TEST(DockerGpuValidate, NoDeviceDriverSaysDockerdStartedWithoutTheHook) {
  const auto run = DockerGpu(1, "run-gpus-no-hook.txt", 125);
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "docker run --rm --gpus all nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi -L "
            "failed (exit 125): Error response from daemon: could not select device driver \"\" "
            "with capabilities: [[gpu]] (dockerd started without the NVIDIA container toolkit's "
            "hook: restart docker)\n");
}

TEST(DockerGpuValidate, TheHooksErrorIsShownWhenTheDriverDoesNotAnswer) {
  const auto run = DockerGpu(1, "run-gpus-driver-not-loaded.txt", 125);
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(ValidateHas(run.out,
                          "failed (exit 125): Error response from daemon: failed to "
                          "create task for container"))
      << run.out;
  EXPECT_TRUE(ValidateHas(run.out,
                          "nvidia-container-cli: initialization error: nvml error: "
                          "driver not loaded: unknown\n"))
      << run.out;
}

TEST(DockerGpuValidate, RunsOnlyOnGpuNodesWithDocker) {
  StepHarness docker(ValidateInventory(1, "policy: {docker: true}\n"));
  EXPECT_FALSE(docker.Applies("validate.docker-gpu", "m"));
  EXPECT_TRUE(docker.Applies("validate.docker-gpu", "w1"));
  StepHarness none(ValidateInventory(1, ""));
  EXPECT_FALSE(none.Applies("validate.docker-gpu", "w1"));
}

// --- validate.ssh-mesh -------------------------------------------------------

TEST(ValidateSteps, SshMeshLogsInToEveryNodeByName) {
  StepHarness h(ValidateInventory(3, ""));
  const std::string log = (h.dir() / "ssh.log").string();
  h.StubSshLogins(log, "");
  const auto run = h.Probe("validate.ssh-mesh", "m");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "ssh by name from the master: 4 of 4 nodes\n");
  // Each node once, whatever order the parallel logins took.
  EXPECT_EQ(testing::SortedLines(ReadAll(log)), "m\nw1\nw2\nw3\n");
}

TEST(ValidateSteps, SshMeshNamesTheNodeThatRefusesWithSshsOwnWords) {
  StepHarness h(ValidateInventory(3, ""));
  h.StubSshLogins((h.dir() / "ssh.log").string(), "w2");
  const auto run = h.Probe("validate.ssh-mesh", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "ssh by name from the master: 3 of 4 nodes; fails to: w2 (root@w2: Permission denied "
            "(publickey).)\n");
}

}  // namespace
}  // namespace gpuctl
