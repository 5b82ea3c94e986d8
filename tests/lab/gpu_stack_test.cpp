// The GPU stack, fabric and monitoring steps (playbooks/25-gpu-stack.yaml,
// 30-fabric.yaml, 80-monitoring.yaml) on real nodes of both families: the
// driver held, cuDNN and NCCL at the inventory's versions, OFED with every
// port Active, /etc/nccl.conf, dcgm-exporter on each GPU node and a real
// Prometheus (Debian's, mirrored into the lab repository) on the master
// scraping them; a second apply sends nothing, and a pulled IB cable (the
// ib-down fault) is named by check. Then a newer kernel installed by hand
// (playbooks/35-kernel.yaml): check names what it lacks, apply builds the
// driver's module for it and holds it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

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

// worker1 is Ubuntu (apt) and worker2 Rocky (dnf) in `--profile mixed`; both
// have 8 A100s and mlx5_0/mlx5_1 at 200. The lab inventory has no versions:
// the defaults apply (driver 550, CUDA 12.4, cuDNN 9.1, NCCL 2.21, OFED 24.01).
const std::vector<std::string> kGpuNodes = {"worker1", "worker2"};

class GpuStackLabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::MissingPrerequisite().empty()) return;
    test::OnlySteps("gpu,cuda,ib,kernel,monitor");
    lab_ = new Lab(fmt::format("gs{}", getpid()));
    if (!lab_->Up(&up_log_, "--profile mixed")) return;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
    // Fresh nodes first, with versions their repositories do not have: the
    // preflight reads NVIDIA's repository, not set up on them yet, into a
    // scratch directory, and refuses.
    unavailable_ = (runs_ / "inventory-unavailable.yaml").string();
    fs::create_directories(runs_);
    std::ofstream(unavailable_) << test::ReadFile(lab_->Env("LAB_INVENTORY"))
                                << "versions:\n  driver: \"550.54.99\"\n  cuda: \"12.3\"\n"
                                << "  cudnn: \"8.7\"\n  ofed: \"23.99\"\n";
    rpm_keys_before_ = On("worker2", "rpm -qa gpg-pubkey | wc -l");
    refused_plan_ = Gpuctl("plan", unavailable_);
    refused_apply_ = Gpuctl("apply --yes --run-dir " + RunDir("refused"), unavailable_);
    sources_after_refusal_ = On("worker1", "ls /etc/apt/sources.list.d/ | grep -c gpuctl") + " " +
                             On("worker2", "ls /etc/yum.repos.d/ | grep -c gpuctl") + " " +
                             On("worker2", "rpm -qa gpg-pubkey | wc -l");
    first_apply_ = Gpuctl("apply --yes --run-dir " + RunDir("first"));
  }
  static void TearDownTestSuite() {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
    delete lab_;
    lab_ = nullptr;
  }
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_FALSE(lab_->nodes().empty()) << up_log_;
    ASSERT_EQ(first_apply_.status, 0) << first_apply_.out;
  }

  static Result Gpuctl(const std::string& args, const std::string& inventory = "") {
    return Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " " + args + " " +
                 Quote(inventory.empty() ? lab_->Env("LAB_INVENTORY") : inventory) +
                 " 2>&1 </dev/null");
  }
  static std::string RunDir(const std::string& name) { return (runs_ / name).string(); }
  static std::string On(const std::string& node, const std::string& command) {
    return Trim(lab_->Ssh(node, command).out);
  }

  static Lab* lab_;
  static std::string up_log_;
  static fs::path runs_;
  static Result first_apply_;
  static std::string unavailable_;
  static Result refused_plan_;
  static Result refused_apply_;
  static std::string sources_after_refusal_;
  static std::string rpm_keys_before_;
};

Lab* GpuStackLabTest::lab_ = nullptr;
std::string GpuStackLabTest::up_log_;
fs::path GpuStackLabTest::runs_;
Result GpuStackLabTest::first_apply_;
std::string GpuStackLabTest::unavailable_;
Result GpuStackLabTest::refused_plan_;
Result GpuStackLabTest::refused_apply_;
std::string GpuStackLabTest::sources_after_refusal_;
std::string GpuStackLabTest::rpm_keys_before_;

TEST_F(GpuStackLabTest, VersionsTheRepositoriesLackAreRefusedBeforeAnythingChanges) {
  // Ubuntu's driver comes from the node's own archive (restricted); Rocky's,
  // the toolkits and cuDNN from NVIDIA's repository, read into the batch's
  // scratch (cuDNN 8.7: the lab has 8.9 builds only).
  const std::string& plan = refused_plan_.out;
  EXPECT_EQ(refused_plan_.status, 1) << plan;
  const auto refused = [](const char* step, const char* why) {
    return fmt::format("x {:<30} refused: {}", step, why);
  };
  for (const std::string& line :
       {refused("gpu.driver",
                "the node's apt sources offer no nvidia-driver-550 550.54.99 (they have "
                "550.127.05-0ubuntu0.22.04.1, 550.54.14-0ubuntu0.22.04.1); set versions.driver to "
                "a release they have, or to \"550\" for the branch's newest"),
        refused("gpu.driver",
                "repository cuda offers no cuda-drivers-550 550.54.99 (it has 550.127.05-1, "
                "550.54.14-1); set versions.driver to a release they have, or to \"550\" for the "
                "branch's newest"),
        refused("cuda.toolkit",
                "repository cuda offers no cuda-toolkit-12-3 (no cuda-toolkit-12-3 at all); set "
                "versions.cuda to a CUDA it has"),
        refused("cuda.cudnn",
                "repository cuda offers no libcudnn8 8.7 built for CUDA 12 (it has "
                "8.9.7.29-1+cuda12.2, 8.9.7.29-1+cuda11.8, 8.9.2.26-1+cuda12.1); set "
                "versions.cudnn to a release built for CUDA 12"),
        refused("cuda.cudnn",
                "repository cuda offers no libcudnn8 8.7 built for CUDA 12 (it has "
                "8.9.7.29-1.cuda12.2, 8.9.7.29-1.cuda11.8, 8.9.2.26-1.cuda12.1); set "
                "versions.cudnn to a release built for CUDA 12")}) {
    EXPECT_NE(plan.find(line), std::string::npos) << line << "\n" << plan;
  }
  // MLNX OFED 23.99: the mirror has no repository for that release (one per
  // release), which its server says with a 404 for the index.
  for (const std::string index : {"/ofed/latest-23.99/ubuntu22.04/amd64/Release",
                                  "/ofed/latest-23.99/rhel9.4/x86_64/repodata/repomd.xml"}) {
    const auto at = plan.find(index);
    ASSERT_NE(at, std::string::npos) << index << "\n" << plan;
    const auto from = plan.find_first_not_of(' ', plan.rfind('\n', at) + 1);
    const std::string line = plan.substr(from, plan.find('\n', at) - from);
    const std::string head = refused("ib.ofed", "repository ofed has no index at http://");
    const std::string tail = index +
                             " (the server answers 404 Not Found); set versions.ofed to a "
                             "release the mirror has";
    EXPECT_EQ(line.substr(0, head.size()), head) << line;
    EXPECT_EQ(line.substr(line.size() - std::min(line.size(), tail.size())), tail) << line;
  }
  // One toolkit line for each node.
  EXPECT_NE(plan.find(refused("cuda.toolkit", "")), plan.rfind(refused("cuda.toolkit", "")));
  EXPECT_NE(plan.find("8 changes cannot succeed as the inventory asks"), std::string::npos) << plan;

  EXPECT_EQ(refused_apply_.status, 1) << refused_apply_.out;
  EXPECT_EQ(ChangesIn(RunDir("refused")), 0) << refused_apply_.out;
  // Not even a repository was set up: the preflight read NVIDIA's into its
  // scratch only (gpuctl's sources on worker1, worker2; rpm's keys, which
  // the scratch's metadata check must not have added to).
  EXPECT_EQ(sources_after_refusal_, "0 0 " + rpm_keys_before_);
}

TEST_F(GpuStackLabTest, StackFabricAndMonitoringConvergeOnBothFamilies) {
  // Each step was applied where it belongs: the six node steps on both GPU
  // nodes, Prometheus on the master (the progress lines "<node> <step> applied").
  const auto applied = [](const std::string& step) {
    std::istringstream lines(first_apply_.out);
    int n = 0;
    for (std::string line; std::getline(lines, line);) {
      const auto at = line.find(" " + step + " ");
      if (at != std::string::npos && line.find("applied", at) != std::string::npos) ++n;
    }
    return n;
  };
  for (const char* step : {"gpu.driver-hold", "cuda.cudnn", "cuda.nccl", "ib.ofed", "ib.ofed-hold",
                           "ib.nccl-env", "monitor.dcgm-exporter"}) {
    EXPECT_EQ(applied(step), 2) << step << "\n" << first_apply_.out;
  }
  EXPECT_EQ(applied("monitor.prometheus"), 1) << first_apply_.out;

  // apt: every driver package held, and OFED's. dnf (no versionlock plugin
  // in the lab): the driver's packages excluded, so the newer branch the
  // repository offers is invisible to upgrades, and visible again without
  // the excludes; OFED's too (the lab repository has 24.01 and 23.10 only,
  // so there is no newer one to hide).
  // And the running kernel's headers, which gpu.driver installed for the
  // driver's DKMS build (kernel.hold).
  const std::string held = On("worker1", "apt-mark showhold | sort | tr '\\n' ' '");
  EXPECT_EQ(held, "libnvidia-compute-550 linux-headers-" + On("worker1", "uname -r") +
                      " mlnx-ofed-all nvidia-dkms-550 nvidia-driver-550 nvidia-utils-550");
  EXPECT_NE(On("worker2", "grep '^excludepkgs=' /etc/dnf/dnf.conf").find("mlnx-ofed-all"),
            std::string::npos);
  EXPECT_EQ(On("worker2", "dnf -q check-update 'cuda-drivers*' 'kmod-nvidia*'; echo rc=$?"),
            "rc=0");
  EXPECT_NE(On("worker2", "dnf -q --disableexcludes=main check-update cuda-drivers"), "")
      << "the lab repository should offer a newer cuda-drivers than 550";

  for (const std::string& node : kGpuNodes) {
    SCOPED_TRACE(node + " (" + lab_->Node(node).os + ")");
    // cuDNN 9.1 and NCCL 2.21 as an admin checks them: headers and libraries.
    EXPECT_EQ(On(node,
                 "awk '$2 ~ /^CUDNN_(MAJOR|MINOR)$/ { print $3 }' "
                 "/usr/include/cudnn_version.h | paste -sd."),
              "9.1");
    EXPECT_EQ(On(node,
                 "awk '$2 ~ /^NCCL_(MAJOR|MINOR)$/ { print $3 }' /usr/include/nccl.h | "
                 "paste -sd."),
              "2.21");
    EXPECT_EQ(On(node, "test -e /usr/lib/x86_64-linux-gnu/libnccl.so.2 && echo yes"), "yes");
    // OFED: ports Active at 200, openibd on at boot; NCCL pointed at them.
    EXPECT_EQ(On(node, "ibstat | grep -cE 'State: Active|Rate: 200'"), "4");
    EXPECT_EQ(On(node, "systemctl is-enabled openibd"), "enabled");
    EXPECT_EQ(On(node, "grep ^NCCL_ /etc/nccl.conf | tr '\\n' ' '"),
              "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 NCCL_SOCKET_IFNAME=eth0");
    // dcgm-exporter serves one temperature per GPU.
    EXPECT_EQ(On(node, "curl -fsS localhost:9400/metrics | grep -c '^DCGM_FI_DEV_GPU_TEMP{'"), "8");
  }

  // The master's Prometheus scrapes both nodes' exporters: its own query
  // API sees eight GPUs per node, labelled with the inventory's names.
  const std::string query =
      "curl -fsS 'http://localhost:9090/api/v1/query' "
      "--data-urlencode 'query=count by (node) (DCGM_FI_DEV_GPU_TEMP)'";
  std::string answer;
  EXPECT_TRUE(test::PollUntil(std::chrono::seconds(60), [&] {
    answer = On("master1", query);
    return answer.find("\"worker1\"},\"value\":[") != std::string::npos &&
           answer.find("\"worker2\"},\"value\":[") != std::string::npos;
  })) << answer;
  EXPECT_EQ(On("master1", query + " | grep -o '\"[0-9]*\"]' | tr '\\n' ' '"), "\"8\"] \"8\"]");

  const Result check = Gpuctl("check");
  EXPECT_EQ(check.status, 0) << check.out;

  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("second"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("second")), 0) << again.out;
}

// cuDNN 8 (issue 11, item 6): NVIDIA ships one libcudnn8 for every CUDA, the
// build in its version. With versions.cudnn 8.9 and CUDA 12.4, both families
// get 8.9.7.29 built for CUDA 12.2 (the repository has an 11.8 build too),
// its header and library beside cuDNN 9's; a second apply changes nothing.
TEST_F(GpuStackLabTest, CudnnEightIsTheBuildForTheCudaMajorOnBothFamilies) {
  const fs::path eight = runs_ / "cudnn8.yaml";
  ASSERT_EQ(Shell("cp " + Quote(lab_->Env("LAB_INVENTORY")) + " " + Quote(eight.string()) +
                  " && printf 'versions:\\n  cudnn: \"8.9\"\\n' >> " + Quote(eight.string()))
                .status,
            0);
  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("cudnn8"), eight.string());
  EXPECT_EQ(apply.status, 0) << apply.out;
  for (const std::string& node : kGpuNodes) {
    SCOPED_TRACE(node + " (" + lab_->Node(node).os + ")");
    EXPECT_EQ(On(node,
                 "dpkg-query -W -f='${Version}' libcudnn8 2>/dev/null || "
                 "rpm -q --qf '%{version}-%{release}' libcudnn8"),
              node == "worker1" ? "8.9.7.29-1+cuda12.2" : "8.9.7.29-1.cuda12.2");
    EXPECT_EQ(On(node,
                 "awk '$2 ~ /^CUDNN_(MAJOR|MINOR)$/ { print $3 }' "
                 "/usr/include/x86_64-linux-gnu/cudnn_version_v8.h | paste -sd."),
              "8.9");
    EXPECT_EQ(On(node, "test -e /usr/lib/x86_64-linux-gnu/libcudnn.so.8 && echo yes"), "yes");
  }
  const Result check = Gpuctl("check", eight.string());
  EXPECT_EQ(check.status, 0) << check.out;
  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("cudnn8-again"), eight.string());
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("cudnn8-again")), 0) << again.out;
}

TEST_F(GpuStackLabTest, CheckNamesADownIbPortOnEachFamily) {
  // mlx5_1's cable pulled on both: on worker1, the subnet manager
  // (fabric.subnet_manager), its OpenSM on that port manages nothing either.
  ASSERT_EQ(Shell(lab_->Tool("fault worker1 ib-down=mlx5_1") + " 2>&1").status, 0);
  ASSERT_EQ(Shell(lab_->Tool("fault worker2 ib-down=mlx5_1") + " 2>&1").status, 0);
  const Result check = Gpuctl("check");
  EXPECT_EQ(check.status, 2) << check.out;
  EXPECT_NE(check.out.find("worker1: mlx5_1 port 1: State Down (want Active) (ib.ofed)"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("worker2: mlx5_1 port 1: State Down (want Active) (ib.ofed)"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("worker1: mlx5_1 port 1: State Down: the OpenSM bound to it manages "
                           "nothing (ib.subnet-manager)"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("3 mismatches"), std::string::npos) << check.out;

  // plan gives the same verdict (issue: it used to say "= ib.ofed ok" here),
  // marked as something apply cannot fix; with a GPU gone from worker1 too.
  ASSERT_EQ(Shell(lab_->Tool("fault worker1 ib-down=mlx5_1 gpu-missing=1") + " 2>&1").status, 0);
  const Result plan = Gpuctl("plan");
  EXPECT_EQ(plan.status, 0) << "nothing apply could change\n" << plan.out;
  for (const std::string& line :
       {std::string("! ib.ofed                        apply cannot fix: mlx5_1 port 1: State Down "
                    "(want Active)"),
        std::string("! ib.subnet-manager              apply cannot fix: mlx5_1 port 1: State "
                    "Down: the OpenSM bound to it manages nothing"),
        std::string("! gpu.driver                     apply cannot fix: 7 of 8 GPUs visible")}) {
    EXPECT_NE(plan.out.find(line), std::string::npos) << line << "\n" << plan.out;
  }
  const Result check_gpu = Gpuctl("check");
  EXPECT_NE(check_gpu.out.find("worker1: 7 of 8 GPUs visible (gpu.driver)"), std::string::npos)
      << check_gpu.out;

  ASSERT_EQ(Shell(lab_->Tool("fault worker1 --clear") + " 2>&1").status, 0);
  ASSERT_EQ(Shell(lab_->Tool("fault worker2 --clear") + " 2>&1").status, 0);
  const Result healed = Gpuctl("check");
  EXPECT_EQ(healed.status, 0) << healed.out;
}

// Last: it leaves a second kernel on both nodes. The lab's nodes share the
// host's kernel, so the new one is a stand-in that only ever "boots next"
// (docs/standins.md#kernels-and-dkms); DKMS is the stand-in's too.
TEST_F(GpuStackLabTest, ANewerKernelIsCheckedForTheDriverAndGetsItBeforeItBoots) {
  struct Kernel {
    std::string node, install, version, module;
  };
  const std::vector<Kernel> kernels = {
      {"worker1", "apt-get install -y -q linux-image-5.15.0-131-generic", "5.15.0-131-generic",
       "/lib/modules/5.15.0-131-generic/updates/dkms/nvidia.ko"},
      {"worker2", "dnf -y -q install kernel-core-5.14.0-503.22.1.el9_5",
       "5.14.0-503.22.1.el9_5.x86_64",
       "/lib/modules/5.14.0-503.22.1.el9_5.x86_64/extra/nvidia.ko.xz"}};
  for (const Kernel& k : kernels) {
    // As `apt upgrade` or `dnf update` would bring it in, without headers:
    // the kernel's DKMS hook cannot build the driver for it.
    const Result installed = lab_->Ssh(k.node, k.install + " 2>&1");
    ASSERT_EQ(installed.status, 0) << installed.out;
    EXPECT_EQ(On(k.node, "test -e " + k.module + " || echo none"), "none");
  }
  const std::string running = On("worker1", "uname -r");

  const Result check = Gpuctl("check");
  EXPECT_EQ(check.status, 2) << check.out;
  for (const Kernel& k : kernels) {
    EXPECT_NE(check.out.find(k.node + ": kernel " + k.version + " boots next (running " + running +
                             ") and lacks nvidia/550."),
              std::string::npos)
        << check.out;
  }
  EXPECT_NE(check.out.find("worker1: not held: linux-image-5.15.0-131-generic (kernel.hold)"),
            std::string::npos)
      << check.out;

  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("kernel"));
  ASSERT_EQ(apply.status, 0) << apply.out;
  for (const Kernel& k : kernels) {
    SCOPED_TRACE(k.node);
    EXPECT_EQ(On(k.node, "test -e " + k.module + " && echo built"), "built");
    EXPECT_NE(On(k.node, "dkms status -k " + k.version).find(": installed"), std::string::npos);
  }
  EXPECT_NE(On("worker1", "apt-mark showhold").find("linux-image-5.15.0-131-generic"),
            std::string::npos);
  EXPECT_NE(On("worker2",
               "grep -h kernel-core /etc/dnf/dnf.conf "
               "/etc/dnf/plugins/versionlock.list 2>/dev/null"),
            "");
  const Result healed = Gpuctl("check");
  EXPECT_EQ(healed.status, 0) << healed.out;
}

}  // namespace
}  // namespace gpuctl
