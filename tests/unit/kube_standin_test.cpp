// Tests of the lab's Kubernetes stand-ins (lab/standins/{kubeadm,kubelet,kubectl,
// helm,kube-standin-common}): a real stand-in API server runs from the source
// tree on 127.0.0.1 (ephemeral port, temporary state), and the tools run
// through their packaged /usr/bin wrappers with GPUCTL_KUBE_ROOT giving each
// fake node its own filesystem. Heartbeats are driven with `kubelet --once`.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using std::chrono::steady_clock;

constexpr int kGpuCount = 4;
fs::path Standins() { return fs::path(GPUCTL_SOURCE_DIR) / "lab" / "standins"; }
fs::path LibDir() { return Standins() / "kube-standin-common/root/usr/lib/gpuctl-lab/kube"; }

struct Result {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const fs::path& p, const std::string& text,
               fs::perms mode = fs::perms::owner_read | fs::perms::owner_write) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  fs::permissions(p, mode);
}

// The wrappers prefer /usr/bin/python3 (what lab nodes have); so does the test.
std::string Python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

bool HavePython() {
  return fs::exists("/usr/bin/python3") || std::system("command -v python3 >/dev/null 2>&1") == 0;
}

// GET /healthz on 127.0.0.1:port; true when the server answers "ok".
bool Healthy(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET /healthz HTTP/1.0\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      std::string resp;
      char buf[512];
      ssize_t n = 0;
      while ((n = ::read(fd, buf, sizeof(buf))) > 0) resp.append(buf, static_cast<size_t>(n));
      ok = resp.find("200") != std::string::npos && resp.size() >= 2 &&
           resp.compare(resp.size() - 2, 2, "ok") == 0;
    }
  }
  ::close(fd);
  return ok;
}

class KubeStandinTest : public ::testing::Test {
 protected:
  // Seconds without a heartbeat before the server calls a node NotReady.
  virtual int GraceSeconds() const { return 40; }

  void SetUp() override {
    if (!HavePython())
      GTEST_SKIP() << "python3 is not installed; the Kubernetes stand-ins are "
                      "python3 programs";
    char tmpl[] = "/tmp/gpuctl-kube-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* d : {"master", "worker", "home", "gpubin"}) fs::create_directories(dir_ / d);
    WriteFile(dir_ / "proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
    WriteFile(dir_ / "proc/sys/net/ipv4/ip_forward", "1\n");
    WriteFile(dir_ / "proc/sys/net/bridge/bridge-nf-call-iptables", "1\n");
    WriteFile(dir_ / "master/profile.env",
              "LAB_NODE=master\nLAB_ADDRESS=127.0.0.1\nLAB_MASTER_ADDRESS=127.0.0.1\n"
              "GPU_MODEL=\"NVIDIA H100 80GB HBM3\"\nGPU_COUNT=0\nFAULTS=\n");
    WriteFile(dir_ / "worker/profile.env",
              "LAB_NODE=worker1\nLAB_ADDRESS=127.0.0.1\nLAB_MASTER_ADDRESS=127.0.0.1\n"
              "GPU_MODEL=\"NVIDIA H100 80GB HBM3\"\nGPU_COUNT=" +
                  std::to_string(kGpuCount) + "\nFAULTS=\n");
    WriteNvidiaSmi(0);
    StartServer();
  }

  // The driver stand-in's nvidia-smi is another package; a tiny fake of its
  // -L will do: kGpuCount GPUs, the first with `mig` MIG 1g.10gb devices.
  void WriteNvidiaSmi(int mig) const {
    std::string smi = "#!/bin/sh\n[ \"$1\" = -L ] || exit 0\n";
    for (int i = 0; i < kGpuCount; ++i) {
      smi += "echo 'GPU " + std::to_string(i) + ": NVIDIA H100 80GB HBM3 (UUID: GPU-0000000" +
             std::to_string(i) + "-1111-2222-3333-444444444444)'\n";
      for (int d = 0; i == 0 && d < mig; ++d) {
        smi += "echo '  MIG 1g.10gb     Device  " + std::to_string(d) + ": (UUID: MIG-0000000" +
               std::to_string(d) + "-1111-5222-3333-444444444444)'\n";
      }
    }
    WriteFile(dir_ / "gpubin/nvidia-smi", smi, fs::perms::owner_all);
  }

  void TearDown() override {
    if (server_pid_ > 0) {
      ::kill(server_pid_, SIGTERM);
      int status = 0;
      ::waitpid(server_pid_, &status, 0);
    }
    if (!dir_.empty() && !::testing::Test::HasFailure()) fs::remove_all(dir_);
  }

  void StartServer() {
    const fs::path log = dir_ / "apiserver.log";
    const std::string profile = (dir_ / "master/profile.env").string();
    const std::string grace = std::to_string(GraceSeconds());
    const std::string script = (LibDir() / "apiserver.py").string();
    const std::string port_file = (dir_ / "port").string();
    const std::string python = Python();
    const std::string state = (dir_ / "master/var/lib/gpuctl-lab/apiserver").string();
    server_pid_ = ::fork();
    ASSERT_GE(server_pid_, 0);
    if (server_pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::setenv("GPUCTL_LAB_PROFILE", profile.c_str(), 1);
      ::setenv("GPUCTL_KUBE_GRACE_S", grace.c_str(), 1);
      ::setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
      ::execlp(python.c_str(), "python3", "-B", script.c_str(), "--bind", "127.0.0.1", "--port",
               "0", "--port-file", port_file.c_str(), "--state-dir", state.c_str(),
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Poll for the port file, then for /healthz.
    const auto deadline = steady_clock::now() + std::chrono::seconds(30);
    while (steady_clock::now() < deadline) {
      std::string text = ReadFile(dir_ / "port");
      if (!text.empty() && text.back() == '\n') {
        port_ = std::stoi(text);
        if (Healthy(port_)) return;
      }
      int status = 0;
      if (::waitpid(server_pid_, &status, WNOHANG) == server_pid_) {
        server_pid_ = -1;
        FAIL() << "API server exited: " << ReadFile(log);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "API server not ready in 30 s: " << ReadFile(log);
  }

  // Runs `cmd` (sh) as node "master" or "worker" with a clean environment.
  Result Run(const std::string& cmd, const std::string& node = "master",
             const std::string& extra_env = "") {
    std::string path;
    for (const char* pkg : {"kubeadm", "kubelet", "kubectl", "helm"}) {
      path += (Standins() / pkg / "root/usr/bin").string() + ":";
    }
    if (extra_env.find("WITH_GPU=1") != std::string::npos) path += (dir_ / "gpubin").string() + ":";
    path += "/usr/local/bin:/usr/bin:/bin";
    const fs::path script = dir_ / "cmd.sh";
    WriteFile(script, cmd + "\n");
    std::ostringstream full;
    full << "cd " << dir_.string() << " && env -i PATH=" << path
         << " HOME=" << (dir_ / "home").string()
         << " LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 GPUCTL_KUBE_LIBDIR=" << LibDir().string()
         << " GPUCTL_KUBE_SYSTEMCTL=true GPUCTL_KUBE_PROC=" << (dir_ / "proc").string()
         << " GPUCTL_KUBE_API_PORT=" << port_ << " GPUCTL_KUBE_DISCOVERY_TIMEOUT_S=1"
         << " GPUCTL_KUBE_ROOT=" << (dir_ / node).string()
         << " GPUCTL_LAB_PROFILE=" << (dir_ / node / "profile.env").string() << " " << extra_env
         << " sh " << script.string() << " >" << (dir_ / "out").string() << " 2>"
         << (dir_ / "err").string() << " </dev/null";
    Result r;
    const int status = std::system(full.str().c_str());
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadFile(dir_ / "out");
    r.err = ReadFile(dir_ / "err");
    return r;
  }

  std::string AdminEnv() const {
    return "KUBECONFIG=" + (dir_ / "master/etc/kubernetes/admin.conf").string();
  }
  // The admin's environment with kubeadm at `version`.
  std::string AdminEnvFor(const std::string& version) const {
    return AdminEnv() + " GPUCTL_KUBE_VERSION_KUBEADM=" + version;
  }

  // kubeadm init on "master"; returns the output and fills token_/ca_hash_.
  Result Init(const std::string& extra_flags = "") {
    Result r =
        Run("kubeadm init --pod-network-cidr=10.244.0.0/16 "
            "--apiserver-advertise-address=127.0.0.1 --ignore-preflight-errors=Port-" +
            std::to_string(port_) + " " + extra_flags);
    std::smatch m;
    const std::regex join(
        "kubeadm join 127\\.0\\.0\\.1:" + std::to_string(port_) +
        " --token ([a-z0-9]{6}\\.[a-z0-9]{16}) \\\\\n\t--discovery-token-ca-cert-hash "
        "(sha256:[0-9a-f]{64})");
    if (std::regex_search(r.out, m, join)) {
      token_ = m[1];
      ca_hash_ = m[2];
    }
    return r;
  }

  Result Join(const std::string& token, const std::string& hash) {
    return Run("kubeadm join 127.0.0.1:" + std::to_string(port_) + " --token " + token +
                   " --discovery-token-ca-cert-hash " + hash,
               "worker");
  }

  fs::path dir_;
  pid_t server_pid_ = -1;
  int port_ = 0;
  std::string token_;
  std::string ca_hash_;
};

const char* kFlannel = "kubectl apply -f ";

// Calico's manifest install: calico-node makes the default IPv4 pool at its
// first start, from kubeadm's podSubnet, and never changes it; install-cni
// writes 10-calico.conflist with the node's name on every node.
TEST_F(KubeStandinTest, CalicoMakesItsPoolOnceFromThePodSubnetAndConfiguresEveryNode) {
  ASSERT_EQ(Init().rc, 0);
  ASSERT_EQ(Join(token_, ca_hash_).rc, 0);
  const std::string url =
      "https://raw.githubusercontent.com/projectcalico/calico/v3.28.1/manifests/calico.yaml";
  Result calico = Run("kubectl apply -f " + url, "master", AdminEnv());
  ASSERT_EQ(calico.rc, 0) << calico.err;
  EXPECT_NE(calico.out.find("daemonset.apps/calico-node created"), std::string::npos) << calico.out;
  EXPECT_NE(
      calico.out.find("customresourcedefinition.apiextensions.k8s.io/ippools.crd.projectcalico.org "
                      "created"),
      std::string::npos)
      << calico.out;
  const std::string pool_cidr =
      "kubectl get ippools.crd.projectcalico.org default-ipv4-ippool -o "
      "jsonpath='{.spec.cidr}'";
  Result none = Run(pool_cidr, "master", AdminEnv());
  EXPECT_EQ(none.rc, 1);
  EXPECT_NE(none.err.find("Error from server (NotFound): ippools.crd.projectcalico.org "
                          "\"default-ipv4-ippool\" not found"),
            std::string::npos)
      << none.err;

  EXPECT_EQ(Run("kubelet --once", "master").rc, 0);
  EXPECT_EQ(Run("kubelet --once", "worker").rc, 0);
  const std::string conflist = ReadFile(dir_ / "worker/etc/cni/net.d/10-calico.conflist");
  EXPECT_NE(conflist.find("\"type\": \"calico\""), std::string::npos) << conflist;
  EXPECT_NE(conflist.find("\"mtu\": 1480,"), std::string::npos) << conflist;
  EXPECT_NE(conflist.find("\"kubeconfig\": \"/etc/cni/net.d/calico-kubeconfig\""),
            std::string::npos)
      << conflist;
  EXPECT_EQ(conflist.find("__"), std::string::npos) << "a placeholder left: " << conflist;
  EXPECT_TRUE(fs::exists(dir_ / "worker/opt/cni/bin/calico-ipam"));
  EXPECT_FALSE(fs::exists(dir_ / "worker/etc/cni/net.d/10-flannel.conflist"));
  Result pool = Run(pool_cidr, "master", AdminEnv());
  EXPECT_EQ(pool.rc, 0) << pool.err;
  EXPECT_EQ(pool.out, "10.244.0.0/16");
  Result wait =
      Run("kubectl wait --for=condition=Ready nodes --all --timeout=20s", "master", AdminEnv());
  EXPECT_EQ(wait.rc, 0) << wait.err;
  Result pods = Run("kubectl get pods -n kube-system --no-headers", "master", AdminEnv());
  EXPECT_EQ(std::regex_search(pods.out, std::regex("(^|\n)calico-node-[a-z0-9]{5} +1/1 +Running")),
            true)
      << pods.out;
  EXPECT_NE(pods.out.find("calico-kube-controllers-"), std::string::npos) << pods.out;

  // A manifest that sets CALICO_IPV4POOL_CIDR later changes no pool.
  std::string text = ReadFile(LibDir() / "manifests/calico.yaml");
  const std::string commented =
      "# - name: CALICO_IPV4POOL_CIDR\n            #   value: \"192.168.0.0/16\"";
  ASSERT_NE(text.find(commented), std::string::npos);
  text.replace(text.find(commented), commented.size(),
               "- name: CALICO_IPV4POOL_CIDR\n              value: \"10.32.0.0/16\"");
  WriteFile(dir_ / "calico-10.32.yaml", text);
  Result again =
      Run("kubectl apply -f " + (dir_ / "calico-10.32.yaml").string(), "master", AdminEnv());
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_NE(again.out.find("daemonset.apps/calico-node configured"), std::string::npos)
      << again.out;
  EXPECT_EQ(Run("kubelet --once", "worker").rc, 0);
  EXPECT_EQ(Run(pool_cidr, "master", AdminEnv()).out, "10.244.0.0/16");
}

TEST_F(KubeStandinTest, InitJoinFlannelAndGpuOperatorGiveReadyGpuNodes) {
  // init prints the real success text, ending with the join command.
  Result init = Init();
  ASSERT_EQ(init.rc, 0) << init.out << init.err;
  EXPECT_NE(init.out.find("Your Kubernetes control-plane has initialized successfully!"),
            std::string::npos);
  ASSERT_FALSE(token_.empty()) << "no join command in:\n" << init.out;
  const std::string admin = ReadFile(dir_ / "master/etc/kubernetes/admin.conf");
  EXPECT_NE(admin.find("server: https://127.0.0.1:" + std::to_string(port_)), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "master/etc/kubernetes/manifests/kube-apiserver.yaml"));

  // A second init refuses, as the real one does.
  Result again = Run("kubeadm init --ignore-preflight-errors=Port-" + std::to_string(port_));
  EXPECT_NE(again.rc, 0);
  EXPECT_NE(again.err.find("[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]"),
            std::string::npos)
      << again.err;

  // Join is refused with an unknown token or a wrong CA pin.
  Result bad = Join("abcdef.0123456789abcdef", ca_hash_);
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("could not find a JWS signature in the cluster-info ConfigMap for "
                         "token ID \"abcdef\""),
            std::string::npos)
      << bad.err;
  Result bad_secret = Join(token_.substr(0, 7) + "0123456789abcdef", ca_hash_);
  EXPECT_NE(bad_secret.rc, 0);
  EXPECT_NE(bad_secret.err.find("failed to verify JWS signature"), std::string::npos);
  Result bad_pin = Join(token_, "sha256:" + std::string(64, '0'));
  EXPECT_NE(bad_pin.rc, 0);
  EXPECT_NE(bad_pin.err.find("none of the public keys \"" + ca_hash_ + "\" are pinned"),
            std::string::npos)
      << bad_pin.err;
  EXPECT_FALSE(fs::exists(dir_ / "worker/etc/kubernetes/kubelet.conf"));

  // The right token registers the worker.
  Result join = Join(token_, ca_hash_);
  ASSERT_EQ(join.rc, 0) << join.out << join.err;
  EXPECT_NE(join.out.find("This node has joined the cluster:"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "worker/etc/kubernetes/kubelet.conf"));

  // Both nodes listed, NotReady until a CNI is configured.
  Result nodes = Run("kubectl get nodes", "master", AdminEnv());
  ASSERT_EQ(nodes.rc, 0) << nodes.err;
  EXPECT_TRUE(std::regex_search(nodes.out, std::regex("^NAME +STATUS +ROLES +AGE +VERSION\n")))
      << nodes.out;
  EXPECT_TRUE(
      std::regex_search(nodes.out, std::regex("\nmaster +NotReady +control-plane +[0-9]+s +v1\\.")))
      << nodes.out;
  EXPECT_TRUE(std::regex_search(nodes.out, std::regex("\nworker1 +NotReady +<none> +")))
      << nodes.out;

  // Flannel: the manifest is recognised; each kubelet writes the conflist.
  Result flannel =
      Run(kFlannel + (LibDir() / "manifests/kube-flannel.yml").string(), "master", AdminEnv());
  ASSERT_EQ(flannel.rc, 0) << flannel.err;
  EXPECT_NE(flannel.out.find("daemonset.apps/kube-flannel-ds created"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "worker/etc/cni/net.d/10-flannel.conflist"));
  EXPECT_EQ(Run("kubelet --once", "master").rc, 0);
  Result hb = Run("kubelet --once", "worker");
  EXPECT_EQ(hb.rc, 0) << hb.err;
  EXPECT_TRUE(fs::exists(dir_ / "worker/etc/cni/net.d/10-flannel.conflist"));
  Result wait =
      Run("kubectl wait --for=condition=Ready nodes --all --timeout=20s", "master", AdminEnv());
  EXPECT_EQ(wait.rc, 0) << wait.err;
  EXPECT_NE(wait.out.find("node/worker1 condition met"), std::string::npos);
  nodes = Run("kubectl get nodes", "master", AdminEnv());
  EXPECT_TRUE(std::regex_search(nodes.out, std::regex("\nworker1 +Ready +<none> +"))) << nodes.out;

  // GPU Operator with the host driver: the worker advertises its GPUs.
  Result repo = Run("helm repo add nvidia https://helm.ngc.nvidia.com/nvidia && helm repo update",
                    "master", AdminEnv());
  ASSERT_EQ(repo.rc, 0) << repo.err;
  Result helm =
      Run("helm install --wait gpu-operator -n gpu-operator --create-namespace "
          "nvidia/gpu-operator --set driver.enabled=false --set toolkit.enabled=false "
          "--timeout 60s",
          "master", AdminEnv());
  ASSERT_EQ(helm.rc, 0) << helm.out << helm.err;
  EXPECT_NE(helm.out.find("STATUS: deployed"), std::string::npos);
  EXPECT_EQ(Run("kubelet --once", "worker", "WITH_GPU=1").rc, 0);
  const std::string jp = R"(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\t"})"
                         R"({.status.allocatable.nvidia\.com/gpu}{"\n"}{end}')";
  Result gpus = Run(jp, "master", AdminEnv());
  EXPECT_EQ(gpus.out, "master\t\nworker1\t" + std::to_string(kGpuCount) + "\n") << gpus.err;
  Result names =
      Run("kubectl get nodes -o jsonpath='{.items[*].metadata.name}'", "master", AdminEnv());
  EXPECT_EQ(names.out, "master worker1");
  Result list = Run("helm list -A", "master", AdminEnv());
  EXPECT_TRUE(std::regex_search(
      list.out, std::regex("^NAME +\tNAMESPACE +\tREVISION\tUPDATED +\tSTATUS +\tCHART +\t"
                           "APP VERSION\n")))
      << list.out;
  EXPECT_TRUE(
      std::regex_search(list.out, std::regex("\ngpu-operator\tgpu-operator\t1 +\t[^\t]+\tdeployed\t"
                                             "gpu-operator-v[0-9.]+\t")))
      << list.out;

  // Bootstrap tokens show up only in the token commands.
  Result tokens = Run("kubeadm token list");
  EXPECT_NE(tokens.out.find(token_), std::string::npos) << tokens.err;
  const std::string secret = token_.substr(7);
  for (const char* cmd :
       {"kubectl get nodes -o json", "kubectl get nodes -o yaml", "kubectl get pods -A -o wide",
        "kubectl get pods -A -o json", "kubectl get ds -A", "kubectl describe node worker1",
        "kubectl cluster-info", "kubectl config view", "helm list -A -o json",
        "helm status gpu-operator -n gpu-operator -o json",
        "helm get values gpu-operator -n gpu-operator"}) {
    Result r = Run(cmd, "master", AdminEnv());
    EXPECT_EQ(r.rc, 0) << cmd << ": " << r.err;
    EXPECT_EQ((r.out + r.err).find(secret), std::string::npos) << cmd << " printed the token";
  }

  // Without a kubeconfig kubectl falls back to localhost:8080, like the real one.
  Result none = Run("kubectl get nodes", "worker");
  EXPECT_EQ(none.rc, 1);
  EXPECT_NE(none.err.find("The connection to the server localhost:8080 was refused"),
            std::string::npos)
      << none.err;
  Result unknown = Run("kubectl frobnicate", "master", AdminEnv());
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_NE(unknown.err.find("unknown command \"frobnicate\""), std::string::npos);
}

// MIG: the device plugin advertises what nvidia-smi -L lists by the
// operator release's mig.strategy: each MIG device as an nvidia.com/gpu
// (single, the chart's default), or as nvidia.com/mig-<profile> beside the
// whole GPUs (mixed).
TEST_F(KubeStandinTest, MigDevicesFollowTheOperatorsStrategy) {
  ASSERT_EQ(Init().rc, 0);
  ASSERT_EQ(Join(token_, ca_hash_).rc, 0);
  ASSERT_EQ(
      Run(kFlannel + (LibDir() / "manifests/kube-flannel.yml").string(), "master", AdminEnv()).rc,
      0);
  WriteNvidiaSmi(2);  // GPU 0 in two 1g.10gb, the other three whole
  EXPECT_EQ(Run("kubelet --once", "master").rc, 0);
  EXPECT_EQ(Run("kubelet --once", "worker", "WITH_GPU=1").rc, 0);
  ASSERT_EQ(
      Run("kubectl wait --for=condition=Ready nodes --all --timeout=20s", "master", AdminEnv()).rc,
      0);
  ASSERT_EQ(Run("helm repo add nvidia https://helm.ngc.nvidia.com/nvidia", "master", AdminEnv()).rc,
            0);
  const std::string operator_install =
      "helm upgrade --install --wait gpu-operator -n gpu-operator --create-namespace "
      "nvidia/gpu-operator --set driver.enabled=false --set toolkit.enabled=false --timeout 60s";
  ASSERT_EQ(Run(operator_install, "master", AdminEnv()).rc, 0);
  const auto allocatable = [&] {
    EXPECT_EQ(Run("kubelet --once", "worker", "WITH_GPU=1").rc, 0);
    return Run("kubectl get node worker1 -o jsonpath='{.status.allocatable}'", "master", AdminEnv())
        .out;
  };
  std::string single = allocatable();
  EXPECT_NE(single.find(R"("nvidia.com/gpu":"2")"), std::string::npos) << single;
  EXPECT_EQ(single.find("nvidia.com/mig-"), std::string::npos) << single;

  ASSERT_EQ(Run(operator_install + " --set mig.strategy=mixed --set migManager.enabled=false",
                "master", AdminEnv())
                .rc,
            0);
  std::string mixed = allocatable();
  EXPECT_NE(mixed.find(R"("nvidia.com/gpu":"3")"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find(R"("nvidia.com/mig-1g.10gb":"2")"), std::string::npos) << mixed;
  // What k8s.gpu-operator's probe reads: Go's encoder sorts the keys.
  EXPECT_EQ(Run("helm get values gpu-operator -n gpu-operator -o json", "master", AdminEnv()).out,
            R"({"driver":{"enabled":false},"mig":{"strategy":"mixed"},)"
            R"("migManager":{"enabled":false},"toolkit":{"enabled":false}})"
            "\n");
}

// What apply's Kubernetes drain runs (playbooks/60-kubernetes.yaml):
// cordon, drain and uncordon, in kubectl's words.
TEST_F(KubeStandinTest, CordonDrainAndUncordonAsKubectlDoes) {
  ASSERT_EQ(Init().rc, 0);
  ASSERT_EQ(Join(token_, ca_hash_).rc, 0);
  ASSERT_EQ(
      Run(kFlannel + (LibDir() / "manifests/kube-flannel.yml").string(), "master", AdminEnv()).rc,
      0);
  ASSERT_EQ(Run("kubelet --once", "master").rc, 0);
  ASSERT_EQ(Run("kubelet --once", "worker").rc, 0);
  const auto on_worker = [&] {
    return Run("kubectl get pods -A -o jsonpath='{range .items[*]}{.spec.nodeName} "
               "{.metadata.name}{\"\\n\"}{end}' | sed -n 's/^worker1 //p' | sort",
               "master", AdminEnv())
        .out;
  };
  // The scheduler stand-in puts coredns on the worker first.
  ASSERT_NE(on_worker().find("coredns-"), std::string::npos) << on_worker();

  Result cordon = Run("kubectl cordon worker1 && kubectl cordon worker1", "master", AdminEnv());
  EXPECT_EQ(cordon.out, "node/worker1 cordoned\nnode/worker1 already cordoned\n") << cordon.err;
  Result nodes = Run("kubectl get nodes", "master", AdminEnv());
  EXPECT_TRUE(std::regex_search(nodes.out, std::regex("\nworker1 +Ready,SchedulingDisabled +")))
      << nodes.out;
  Result taints =
      Run("kubectl get node worker1 -o jsonpath='{.spec.taints[*].key}'", "master", AdminEnv());
  EXPECT_EQ(taints.out, "node.kubernetes.io/unschedulable");
  // A cordon alone moves nothing: only evictions do.
  EXPECT_NE(on_worker().find("coredns-"), std::string::npos) << on_worker();
  Result uncordon = Run("kubectl uncordon worker1", "master", AdminEnv());
  EXPECT_EQ(uncordon.out, "node/worker1 uncordoned\n") << uncordon.err;

  // DaemonSet pods are refused unless ignored, after the cordon, as kubectl does.
  Result daemons = Run("kubectl drain worker1", "master", AdminEnv());
  EXPECT_EQ(daemons.rc, 1);
  EXPECT_NE(daemons.err.find("error: unable to drain node \"worker1\" due to error: cannot delete "
                             "DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "),
            std::string::npos)
      << daemons.err;
  ASSERT_EQ(Run("kubectl uncordon worker1", "master", AdminEnv()).rc, 0);

  // A bare running pod stops the drain unless forced.
  const fs::path pod = dir_ / "bare.yaml";
  WriteFile(pod,
            "apiVersion: v1\nkind: Pod\nmetadata: {name: notebook, namespace: default}\n"
            "spec: {nodeName: worker1, containers: [{name: main, image: busybox}]}\n");
  ASSERT_EQ(Run("kubectl apply -f " + pod.string(), "master", AdminEnv()).rc, 0);
  Result bare = Run("kubectl drain worker1 --ignore-daemonsets", "master", AdminEnv());
  EXPECT_EQ(bare.rc, 1);
  EXPECT_NE(bare.err.find("cannot delete Pods declare no controller (use --force to override): "
                          "default/notebook"),
            std::string::npos)
      << bare.err;

  Result drain =
      Run("kubectl drain worker1 --ignore-daemonsets --delete-emptydir-data --force --timeout=60s",
          "master", AdminEnv());
  ASSERT_EQ(drain.rc, 0) << drain.err;
  EXPECT_EQ(drain.out.rfind("node/worker1 already cordoned\n", 0), 0U) << drain.out;
  EXPECT_NE(drain.out.find("evicting pod default/notebook\n"), std::string::npos) << drain.out;
  EXPECT_TRUE(std::regex_search(drain.out, std::regex("\nevicting pod kube-system/coredns-")))
      << drain.out;
  EXPECT_TRUE(std::regex_search(drain.out, std::regex("\npod/coredns-[a-z0-9-]+ evicted\n")))
      << drain.out;
  EXPECT_TRUE(drain.out.ends_with("node/worker1 drained\n")) << drain.out;
  EXPECT_NE(drain.err.find("Warning: ignoring DaemonSet-managed Pods: kube-flannel/"),
            std::string::npos)
      << drain.err;
  // Only DaemonSet pods are left on it; coredns runs on the master now.
  const std::string left = on_worker();
  EXPECT_EQ(left.find("coredns-"), std::string::npos) << left;
  EXPECT_EQ(left.find("notebook"), std::string::npos) << left;
  EXPECT_NE(left.find("kube-proxy-"), std::string::npos) << left;
}

// kubectl delete node, as the removal of a node (k8s.forget-nodes) uses it:
// the node is gone, a second delete says NotFound unless ignored, and a
// kubelet that starts again registers it again (why gpuctl resets a node
// before deleting it).
TEST_F(KubeStandinTest, DeleteNodeRemovesItUntilItsKubeletStartsAgain) {
  ASSERT_EQ(Init().rc, 0);
  ASSERT_EQ(Join(token_, ca_hash_).rc, 0);
  ASSERT_EQ(Run("kubelet --once", "worker").rc, 0);
  const auto names = [&] {
    return Run("kubectl get nodes -o jsonpath='{.items[*].metadata.name}'", "master", AdminEnv())
        .out;
  };
  ASSERT_EQ(names(), "master worker1");
  Result deleted = Run("kubectl delete node worker1", "master", AdminEnv());
  EXPECT_EQ(deleted.rc, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "node \"worker1\" deleted\n");
  EXPECT_EQ(names(), "master");
  Result again = Run("kubectl delete node worker1", "master", AdminEnv());
  EXPECT_EQ(again.rc, 1);
  EXPECT_EQ(again.err, "Error from server (NotFound): nodes \"worker1\" not found\n");
  Result ignored = Run("kubectl delete node worker1 --ignore-not-found", "master", AdminEnv());
  EXPECT_EQ(ignored.rc, 0) << ignored.err;
  EXPECT_EQ(ignored.out, "");
  ASSERT_EQ(Run("kubelet --once", "worker").rc, 0);
  EXPECT_EQ(names(), "master worker1");
}

// kubeadm upgrade apply and upgrade node, with kubeadm's version skew
// policy: one minor at a time, never past kubeadm's own version, and a
// node's configuration only from a kubeadm of the cluster's minor.
TEST_F(KubeStandinTest, UpgradeMovesOneMinorAtATimeThenEachNode) {
  ASSERT_EQ(Init().rc, 0);  // kubeadm 1.30.6
  ASSERT_EQ(Join(token_, ca_hash_).rc, 0);
  const auto kubeadm_at = [&](const std::string& version) { return AdminEnvFor(version); };
  Result skip = Run("kubeadm upgrade apply v1.32.0 -y", "master", kubeadm_at("1.32.0"));
  EXPECT_EQ(skip.rc, 1);
  EXPECT_NE(skip.err.find("[upgrade/version] FATAL: the --version argument is invalid due to "
                          "these fatal errors:\n\n\t- Specified version to upgrade to "
                          "\"v1.32.0\" is too high; kubeadm can upgrade only 1 minor version "
                          "at a time\n"),
            std::string::npos)
      << skip.err;
  Result old_kubeadm = Run("kubeadm upgrade apply v1.31.2 -y", "master", kubeadm_at("1.30.6"));
  EXPECT_EQ(old_kubeadm.rc, 1);
  EXPECT_NE(old_kubeadm.err.find("is higher than the kubeadm version \"v1.30.6\". Upgrade "
                                 "kubeadm first"),
            std::string::npos)
      << old_kubeadm.err;
  Result version = Run("kubectl get --raw /version", "master", AdminEnv());
  EXPECT_NE(version.out.find("\"gitVersion\": \"v1.30.6\""), std::string::npos) << version.out;

  Result apply = Run("kubeadm upgrade apply v1.31.2 -y", "master", kubeadm_at("1.31.2"));
  ASSERT_EQ(apply.rc, 0) << apply.err;
  EXPECT_NE(apply.out.find("[upgrade/successful] SUCCESS! Your cluster was upgraded to "
                           "\"v1.31.2\". Enjoy!"),
            std::string::npos)
      << apply.out;
  version = Run("kubectl get --raw /version", "master", AdminEnv());
  EXPECT_NE(version.out.find("\"gitVersion\": \"v1.31.2\""), std::string::npos) << version.out;
  EXPECT_NE(ReadFile(dir_ / "master/etc/kubernetes/manifests/kube-apiserver.yaml")
                .find("registry.k8s.io/kube-apiserver:v1.31.2"),
            std::string::npos);

  // The worker: its kubeadm must be at the cluster's minor first.
  Result stale = Run("kubeadm upgrade node", "worker", "GPUCTL_KUBE_VERSION_KUBEADM=1.30.6");
  EXPECT_EQ(stale.rc, 1);
  EXPECT_NE(stale.err.find("does not match the cluster version \"v1.31.2\""), std::string::npos)
      << stale.err;
  Result node = Run("kubeadm upgrade node", "worker", "GPUCTL_KUBE_VERSION_KUBEADM=1.31.2");
  ASSERT_EQ(node.rc, 0) << node.err;
  EXPECT_NE(node.out.find("[upgrade] The configuration for this node was successfully updated!"),
            std::string::npos)
      << node.out;
  // 1.31's pause image in the kubelet's flags.
  EXPECT_NE(ReadFile(dir_ / "worker/var/lib/kubelet/kubeadm-flags.env")
                .find("--pod-infra-container-image=registry.k8s.io/pause:3.10"),
            std::string::npos);
}

TEST_F(KubeStandinTest, PreflightRefusesSwapAndUnsetSysctls) {
  WriteFile(dir_ / "proc/swaps",
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
            "/swapfile                               file\t\t1048572\t\t0\t\t-2\n");
  WriteFile(dir_ / "proc/sys/net/ipv4/ip_forward", "0\n");
  fs::remove(dir_ / "proc/sys/net/bridge/bridge-nf-call-iptables");
  Result r = Init();
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("[ERROR Swap]: running with swap on is not supported. Please disable swap"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[ERROR FileContent--proc-sys-net-ipv4-ip_forward]: "
                       "/proc/sys/net/ipv4/ip_forward contents are not set to 1"),
            std::string::npos);
  EXPECT_NE(r.err.find("/proc/sys/net/bridge/bridge-nf-call-iptables does not exist"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "master/etc/kubernetes/admin.conf"));

  // Without br_netfilter the persistent sysctl configuration is accepted;
  // swap is only a warning once ignored.
  WriteFile(dir_ / "proc/sys/net/ipv4/ip_forward", "1\n");
  WriteFile(dir_ / "master/etc/sysctl.d/99-kubernetes.conf",
            "net.bridge.bridge-nf-call-iptables = 1\nnet.ipv4.ip_forward = 1\n");
  r = Init("--ignore-preflight-errors=Swap");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("[WARNING Swap]"), std::string::npos);
  EXPECT_FALSE(token_.empty());
}

class KubeStandinShortGraceTest : public KubeStandinTest {
 protected:
  int GraceSeconds() const override { return 2; }
};

TEST_F(KubeStandinShortGraceTest, NodeGoesNotReadyWhenKubeletStopsPosting) {
  ASSERT_EQ(Init().rc, 0);
  ASSERT_EQ(
      Run(kFlannel + (LibDir() / "manifests/kube-flannel.yml").string(), "master", AdminEnv()).rc,
      0);
  ASSERT_EQ(Run("kubelet --once").rc, 0);
  const std::string ready =
      R"(kubectl get node master -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')";
  // Poll: Ready right after the heartbeat, then Unknown once the grace period passes.
  bool saw_unknown = false;
  const auto deadline = steady_clock::now() + std::chrono::seconds(20);
  while (steady_clock::now() < deadline && !saw_unknown) {
    saw_unknown = Run(ready, "master", AdminEnv()).out == "Unknown";
  }
  EXPECT_TRUE(saw_unknown);
  Result nodes = Run("kubectl get nodes", "master", AdminEnv());
  EXPECT_TRUE(std::regex_search(nodes.out, std::regex("\nmaster +NotReady +"))) << nodes.out;
  ASSERT_EQ(Run("kubelet --once").rc, 0);
  EXPECT_EQ(Run(ready, "master", AdminEnv()).out, "True");
}

}  // namespace
}  // namespace gpuctl
