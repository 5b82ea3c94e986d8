// The whole catalog on a Slurm lab with an apt worker and a dnf worker
// (`--profile slurm`: worker1 Ubuntu with 8 A100, worker2 Rocky with 8 H100,
// an NFS storage node), from freshly started nodes, as the README's demo
// runs it: a green check and a second apply that sends nothing prove the
// layers fit together. The first apply leaves worker2 out; it is added to
// the running cluster next, with a job running on worker1 all along: the
// nodes already there change only where the new one needs it (/etc/hosts,
// slurm.conf, the master's known_hosts and scrape targets), nothing reboots
// or drains, and the job keeps running. Then the Slurm steps
// (playbooks/70-slurm.yaml) closer: the daemons are the real Slurm and
// MUNGE, so the test runs jobs in each partition and across both workers; it
// rekeys MUNGE from the environment and checks that no key ever shows in
// gpuctl's output or run directory; and a driver branch migration, which
// reboots the workers, drains each in turn. NFS rides along: the storage node's export shared by
// both clients, the mounts back after the workers' reboots and the
// server's, and a client outside an export's clients refused.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/day2.h"
#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Lab;
using test::PollUntil;
using test::Quote;
using test::ReadFile;
using test::Result;
using test::Shell;
using test::Trim;
namespace fs = std::filesystem;

const std::vector<std::string> kSlurmNodes = {"master1", "worker1", "worker2"};

class SlurmLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    test::OnlySteps("");  // the whole catalog
    lab_ = std::make_unique<Lab>(fmt::format("s{}", getpid()));
    std::string log;
    ASSERT_TRUE(lab_->Up(&log, "--profile slurm")) << log;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
    // The profile's partitions hold one worker each; a job across both needs
    // a third, over every worker (a partition without nodes), here with time
    // limits of its own.
    inventory_ = (fs::path(lab_->Env("LAB_STATE")) / "slurm-test.yaml").string();
    ASSERT_EQ(Shell("sed 's/^    - {name: h100, nodes: \\[worker2\\]}$/&\\n    - {name: all, "
                    "max_time: \"2-00:00:00\", default_time: \"60\"}/' " +
                    Quote(lab_->Env("LAB_INVENTORY")) + " >" + Quote(inventory_))
                  .status,
              0);
    ASSERT_NE(ReadFile(inventory_).find("{name: all, max_time"), std::string::npos);
  }
  void TearDown() override {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
  }

  // -v: every script and its output goes to the terminal, so the leak check
  // below sees everything gpuctl could have shown.
  Result Gpuctl(const std::string& args, const std::string& inventory,
                const std::string& env = "") const {
    return Shell(env + " NO_COLOR=1 " + GPUCTL_BINARY + " -v " + args + " " + Quote(inventory) +
                 " 2>&1 </dev/null");
  }
  std::string RunDir(const std::string& name) const { return (runs_ / name).string(); }
  const std::string& Inventory() const { return inventory_; }

  // "worker1 idle gpu:8" lines from the controller, sorted.
  std::string Sinfo() const {
    return Trim(lab_->Ssh("master1", "sinfo -N -h -o '%N %T %G' | sort -u").out);
  }
  std::string KeyBase64(const std::string& node) const {
    return Trim(lab_->Ssh(node, "base64 -w0 /etc/munge/munge.key").out);
  }
  // Everything a run left on this machine: its output and its run directory.
  bool Leaks(const std::string& secret, const Result& run, const std::string& run_dir) const {
    if (secret.size() < 16) return true;  // no key read: treat as a failure
    if (run.out.find(secret) != std::string::npos) return true;
    return Shell("grep -rqF " + Quote(secret) + " " + Quote(run_dir)).status == 0;
  }

  std::unique_ptr<Lab> lab_;
  fs::path runs_;
  std::string inventory_;
};

// What a node is before gpuctl first touches it, for the reset at the end:
// the files every profile's steps write, and the installed packages.
std::string Pristine(const Lab& lab, const std::string& node) {
  return lab
      .Ssh(node,
           "md5sum /etc/hosts /etc/fstab; (dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n' "
           "2>/dev/null | awk '$1 ~ /^.i/ { print $2 }' || rpm -qa --qf '%{NAME}\\n') | sort -u")
      .out;
}

TEST_F(SlurmLabTest, AptAndDnfWorkersGoIdleWithGpusRunJobsAndKeepTheKeySecret) {
  std::map<std::string, std::string> pristine;
  for (const char* node : {"master1", "worker1", "worker2", "storage1"}) {
    pristine[node] = Pristine(*lab_, node);
  }
  // The cluster before worker2 (and its partition, h100) was added.
  const std::string before = (fs::path(lab_->Env("LAB_STATE")) / "before-worker2.yaml").string();
  const Result without = test::WriteWithoutNode(Inventory(), before, "worker2");
  ASSERT_EQ(without.status, 0) << without.out;
  const Result bare = Gpuctl("apply --yes --run-dir " + RunDir("before-worker2"), before);
  ASSERT_EQ(bare.status, 0) << bare.out;
  EXPECT_TRUE(PollUntil(std::chrono::seconds(30), [&] { return Sinfo() == "worker1 idle gpu:8"; }))
      << Sinfo();

  // Adding worker2, with a job running on worker1 the whole time.
  const Result running =
      lab_->Ssh("master1", "sbatch --parsable -p a100 -w worker1 --wrap 'sleep 900'");
  ASSERT_EQ(running.status, 0) << running.out;
  const std::string running_id = Trim(running.out);
  const auto job_state = [&] {
    return Trim(lab_->Ssh("master1", "squeue -h -j " + running_id + " -o %T").out);
  };
  EXPECT_TRUE(PollUntil(std::chrono::seconds(30), [&] { return job_state() == "RUNNING"; }));
  const test::StepsByNode there = {
      {"master1",
       {"os.hosts", "os.ssh-known-hosts", "slurm.config", "slurm.ready", "monitor.prometheus"}},
      {"worker1", {"os.hosts", "slurm.config"}},
      {"storage1", {"os.hosts"}},
  };
  const Result add_plan = Gpuctl("plan", Inventory());
  EXPECT_EQ(add_plan.status, 2) << add_plan.out;
  test::StepsByNode planned = test::PlannedSteps(add_plan.out);
  for (const auto& [node, steps] : there) {
    std::set<std::string> want;
    for (const std::string& step : steps) want.insert("~ " + step);
    EXPECT_EQ(planned[node], want) << node << "\n" << add_plan.out;
  }
  EXPECT_EQ(add_plan.out.find("apply cannot fix"), std::string::npos) << add_plan.out;

  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("first"), Inventory());
  ASSERT_EQ(apply.status, 0) << apply.out;
  test::StepsByNode changed = test::ChangedSteps(RunDir("first"));
  for (const auto& [node, steps] : there) {
    EXPECT_EQ(changed[node], steps) << node;
  }
  EXPECT_EQ(test::DisruptedNodes(RunDir("first")), std::set<std::string>{"worker2"});
  // slurmctld and slurmd restarted on the new slurm.conf; the job did not notice.
  EXPECT_EQ(job_state(), "RUNNING");
  EXPECT_EQ(lab_->Ssh("master1", "scancel " + running_id).status, 0);

  // Both workers registered, idle, with their GPUs as gres.
  const std::string want = "worker1 idle gpu:8\nworker2 idle gpu:8";
  EXPECT_TRUE(PollUntil(std::chrono::seconds(30), [&] { return Sinfo() == want; })) << Sinfo();
  // The real daemons run a job on both workers, the apt one and the dnf one.
  const Result job = lab_->Ssh("master1", "srun -N2 -p all hostname | sort");
  EXPECT_EQ(job.status, 0);
  EXPECT_EQ(Trim(job.out), "worker1\nworker2");
  // MPI ranks through PMIx on both (slurm.pmix installed the library Slurm's
  // plugin opens, and restarted slurmd on it), and the deep check that says so.
  const Result ranks = lab_->Ssh("master1",
                                 "timeout 120 srun --mpi=pmix -N2 -p all --ntasks-per-node=1 "
                                 "printenv PMIX_RANK | sort");
  EXPECT_EQ(ranks.status, 0) << ranks.out;
  EXPECT_EQ(Trim(ranks.out), "0\n1");
  const Result pmix = Gpuctl("--only validate.slurm-pmix check --deep", Inventory());
  EXPECT_EQ(pmix.status, 0) << pmix.out;
  EXPECT_NE(pmix.out.find("srun --mpi=pmix: ranks 0 to N-1 on every node of a100 (1 node), h100 "
                          "(1 node), all (2 nodes)"),
            std::string::npos)
      << pmix.out;
  EXPECT_EQ(Trim(lab_->Ssh("worker2", "rpm -q --qf '%{NAME}\\n' slurm-slurmd munge").out),
            "slurm-slurmd\nmunge");
  // The partition's time limits as slurmctld read them from slurm.conf.
  const std::string all = lab_->Ssh("master1", "scontrol show partition all").out;
  EXPECT_NE(all.find("MaxTime=2-00:00:00"), std::string::npos) << all;
  EXPECT_NE(all.find("DefaultTime=01:00:00"), std::string::npos) << all;
  // A job asking for all eight GPUs runs in each partition: a100 on the
  // Ubuntu worker, h100 on the Rocky one (the profile's partitions).
  for (const auto& [partition, node] :
       {std::pair{"a100", "worker1"}, std::pair{"h100", "worker2"}}) {
    const Result gpus = lab_->Ssh(
        "master1", std::string("timeout 120 srun -p ") + partition + " --gres=gpu:8 hostname");
    EXPECT_EQ(gpus.status, 0) << partition;
    EXPECT_EQ(Trim(gpus.out), node) << partition;
  }
  // Each worker's CPUs as the worker counts them (not Slurm's default of 1),
  // so a job may ask for all of them, and memory in whole GiB below what the
  // node has.
  for (const char* node : {"worker1", "worker2"}) {
    SCOPED_TRACE(node);
    const std::string cpus = Trim(lab_->Ssh(node, "nproc --all").out);
    EXPECT_EQ(
        Trim(lab_->Ssh("master1", std::string("sinfo -h -N -n ") + node + " -o %c | sort -u").out),
        cpus);
    EXPECT_EQ(lab_->Ssh("master1", "srun -p all -w " + std::string(node) + " -c " + cpus + " true")
                  .status,
              0);
    const long memory = std::stol(
        Trim(lab_->Ssh("master1", std::string("sinfo -h -N -n ") + node + " -o %m | sort -u").out));
    const long total_kb =
        std::stol(Trim(lab_->Ssh(node, "awk '/^MemTotal:/ { print $2 }' /proc/meminfo").out));
    EXPECT_EQ(memory % 1024, 0);
    EXPECT_GT(memory, total_kb / 1024 - 1024);
    EXPECT_LE(memory, total_kb / 1024);
  }

  // One key, the master's, owned by munge with mode 0400, on every node.
  const std::string key = KeyBase64("master1");
  for (const std::string& node : kSlurmNodes) {
    SCOPED_TRACE(node);
    EXPECT_EQ(KeyBase64(node), key);
    EXPECT_EQ(Trim(lab_->Ssh(node, "stat -c '%U %a' /etc/munge/munge.key").out), "munge 400");
    EXPECT_EQ(Trim(lab_->Ssh(node, "id -u slurm").out), "64030");
  }
  EXPECT_FALSE(Leaks(key, bare, RunDir("before-worker2")));
  EXPECT_FALSE(Leaks(key, apply, RunDir("first")));

  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("second"), Inventory());
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("second")), 0) << again.out;
  const Result check = Gpuctl("check", Inventory());
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find(", 0 mismatches, 0 unreachable"), std::string::npos) << check.out;

  // The lab's IB switches run no subnet manager (issue 11, item 3): OpenSM
  // on worker1 (fabric.subnet_manager), one instance per port, brought
  // worker2's ports up, and GPUDirect RDMA's nvidia-peermem is loaded on
  // both workers.
  const auto sm_guid = [&](const std::string& node) {
    const std::string out = lab_->Ssh(node, "sminfo -C mlx5_0 -P 1 2>&1").out;
    const auto at = out.find("sm guid ");
    return at == std::string::npos ? out : out.substr(at + 8, out.find(',', at) - at - 8);
  };
  const auto port_guid = [&](const std::string& node) {
    return Trim(lab_->Ssh(node, "ibstat mlx5_0 | awk '/Port GUID/ { print $3 }'").out);
  };
  const std::string w1_guid = port_guid("worker1");
  const std::string w2_guid = port_guid("worker2");
  EXPECT_EQ(sm_guid("worker2"), w1_guid);
  EXPECT_EQ(Trim(lab_->Ssh("worker1",
                           "systemctl is-active gpuctl-opensm@mlx5_0-1 "
                           "gpuctl-opensm@mlx5_1-1 | sort -u")
                     .out),
            "active");
  for (const char* node : {"worker1", "worker2"}) {
    EXPECT_NE(lab_->Ssh(node, "lsmod").out.find("\nnvidia_peermem "), std::string::npos) << node;
  }
  // Its OpenSM stopped, no subnet manager answers. worker2's ports keep
  // their LIDs while their links stay up, as on a real fabric: check names
  // only the OpenSM. A cable pulled and plugged back trains its link again,
  // and that port stays Initializing: check names what it waits for.
  ASSERT_EQ(lab_->Ssh("worker1", "systemctl stop 'gpuctl-opensm@*'").status, 0);
  const Result no_sm = Gpuctl("check", Inventory());
  EXPECT_NE(no_sm.status, 0) << no_sm.out;
  EXPECT_NE(no_sm.out.find("worker1: OpenSM on mlx5_0 port 1 (gpuctl-opensm@mlx5_0-1) is not "
                           "running (ib.subnet-manager)"),
            std::string::npos)
      << no_sm.out;
  EXPECT_EQ(no_sm.out.find("(ib.ofed)"), std::string::npos) << no_sm.out;
  ASSERT_EQ(Shell(lab_->Tool("fault worker2 ib-down=mlx5_0") + " 2>&1").status, 0);
  ASSERT_EQ(Shell(lab_->Tool("fault worker2 --clear") + " 2>&1").status, 0);
  const Result replugged = Gpuctl("check", Inventory());
  EXPECT_NE(replugged.out.find("worker2: mlx5_0 port 1: State Initializing: no subnet manager "
                               "answers on its fabric yet (OpenSM on worker1) (ib.ofed)"),
            std::string::npos)
      << replugged.out;
  // A standby on worker2 (dnf): apply starts worker1's OpenSM again and
  // installs worker2's; with worker1's stopped, the standby is master and
  // the ports stay Active; back, worker1's (priority 15) is master again.
  const std::string standby = (fs::path(lab_->Env("LAB_STATE")) / "with-standby.yaml").string();
  ASSERT_EQ(Shell("sed 's/^  subnet_manager: worker1$/&\\n  subnet_manager_standby: worker2/' " +
                  Quote(Inventory()) + " > " + Quote(standby))
                .status,
            0);
  ASSERT_NE(ReadFile(standby).find("subnet_manager_standby: worker2"), std::string::npos);
  const Result with_standby = Gpuctl("apply --yes --run-dir " + RunDir("standby"), standby);
  EXPECT_EQ(with_standby.status, 0) << with_standby.out;
  EXPECT_EQ(sm_guid("worker2"), w1_guid);
  ASSERT_EQ(lab_->Ssh("worker1", "systemctl stop 'gpuctl-opensm@*'").status, 0);
  EXPECT_EQ(sm_guid("worker1"), w2_guid) << "the standby took over";
  EXPECT_NE(lab_->Ssh("worker1", "ibstat mlx5_0").out.find("State: Active"), std::string::npos);
  ASSERT_EQ(
      lab_->Ssh("worker1", "systemctl start gpuctl-opensm@mlx5_0-1 gpuctl-opensm@mlx5_1-1").status,
      0);
  EXPECT_TRUE(PollUntil(std::chrono::seconds(30), [&] { return sm_guid("worker2") == w1_guid; }));

  // GPUDirect RDMA on a node whose driver was built before OFED (issue 11,
  // item 2): its nvidia-peermem refuses to load, and apply rebuilds the
  // driver's DKMS module against OFED and loads it.
  ASSERT_EQ(lab_->Ssh("worker1",
                      "set -e; k=$(uname -r); v=$(dkms status -m nvidia -k $k | sed "
                      "'s|^nvidia/||; s|,.*||'); mv /usr/src/ofa_kernel /usr/src/ofa_kernel.away; "
                      "dkms remove nvidia/$v -k $k >/dev/null; dkms install nvidia/$v -k $k "
                      ">/dev/null; mv /usr/src/ofa_kernel.away /usr/src/ofa_kernel; modprobe -r "
                      "nvidia-peermem")
                .status,
            0);
  EXPECT_EQ(lab_->Ssh("worker1", "modprobe nvidia-peermem 2>&1").out,
            "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n");
  const Result rebuilt = Gpuctl("apply --yes --run-dir " + RunDir("peermem"), standby);
  EXPECT_EQ(rebuilt.status, 0) << rebuilt.out;
  // The module DKMS installed for the running kernel is now built against OFED.
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "grep -rhx 'peer memory: .*' /lib/modules/$(uname -r)").out),
            "peer memory: MLNX_OFED 24.01-0.3.3.1");
  EXPECT_NE(lab_->Ssh("worker1", "lsmod").out.find("\nnvidia_peermem "), std::string::npos);

  // NFS (playbooks/50-storage.yaml; the lab simulates the transport,
  // docs/lab.md): the real exportfs lists the export for the lab's subnet
  // only, each client has the fstab line and the mount, and a file written
  // through the Ubuntu client is read through the Rocky one, and back.
  const std::string exports = lab_->Ssh("storage1", "exportfs -v").out;
  EXPECT_NE(exports.find("/data/shared"), std::string::npos) << exports;
  EXPECT_NE(exports.find(lab_->Env("LAB_SUBNET")), std::string::npos)
      << exports << " (subnet " << lab_->Env("LAB_SUBNET") << ")";
  EXPECT_EQ(Trim(lab_->Ssh("storage1", "systemctl is-active nfs-server").out), "active");
  const std::string fstab_line =
      lab_->Node("storage1").address + ":/data/shared /data/shared nfs rw,hard,nfsvers=4.1 0 0";
  for (const std::string& node : kSlurmNodes) {
    SCOPED_TRACE(node);
    EXPECT_EQ(Trim(lab_->Ssh(node, "grep -cxF " + Quote(fstab_line) + " /etc/fstab").out), "1");
    EXPECT_EQ(lab_->Ssh(node, "findmnt -n -M /data/shared").status, 0);
  }
  const std::string token = fmt::format("token-{}", getpid());
  ASSERT_EQ(lab_->Ssh("worker1", "echo " + token + "-w1 > /data/shared/from-worker1").status, 0);
  EXPECT_EQ(Trim(lab_->Ssh("worker2", "cat /data/shared/from-worker1").out), token + "-w1");
  ASSERT_EQ(lab_->Ssh("worker2", "echo " + token + "-w2 > /data/shared/from-worker2").status, 0);
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "cat /data/shared/from-worker2").out), token + "-w2");
  EXPECT_EQ(
      Trim(lab_->Ssh("storage1", "cat /data/shared/from-worker1 /data/shared/from-worker2").out),
      token + "-w1\n" + token + "-w2");

  // A Slurm series the repositories do not carry: plan names the installed
  // packages on both OS families, apply stops at the install and leaves the
  // running cluster as it was.
  const std::string other = (fs::path(lab_->Env("LAB_STATE")) / "other-series.yaml").string();
  ASSERT_EQ(Shell("sed 's/^  slurm: \"22.05\"$/  slurm: \"23.02\"/' " + Quote(Inventory()) + " >" +
                  Quote(other))
                .status,
            0);
  ASSERT_NE(ReadFile(other).find("slurm: \"23.02\""), std::string::npos);
  const Result plan = Gpuctl("plan", other);
  EXPECT_EQ(plan.status, 2) << plan.out;
  EXPECT_NE(plan.out.find("slurmctld 22.05.8"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("slurm-slurmd 22.05.8"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("(want Slurm 23.02)"), std::string::npos) << plan.out;
  const Result refused = Gpuctl("apply --yes --run-dir " + RunDir("other-series"), other);
  EXPECT_EQ(refused.status, 1) << refused.out;
  EXPECT_NE(refused.out.find("the repositories offer no slurmctld of Slurm 23.02"),
            std::string::npos)
      << refused.out;
  EXPECT_EQ(Sinfo(), want);
  EXPECT_EQ(lab_->Ssh("master1", "srun -N2 -p all true").status, 0);

  // The inventory now names a key in the environment: every node takes it,
  // the daemons restart on it, and the nodes come back idle.
  const std::string rekeyed = (fs::path(lab_->Env("LAB_STATE")) / "rekeyed.yaml").string();
  ASSERT_EQ(Shell("sed 's/^slurm:$/slurm:\\n  munge_key_env: GPUCTL_MUNGE_KEY/' " +
                  Quote(Inventory()) + " >" + Quote(rekeyed))
                .status,
            0);
  const std::string new_key =
      Trim(Shell("head -c 96 /dev/urandom | base64 -w0").out);  // 128 base64 characters
  const std::string env = "GPUCTL_MUNGE_KEY=" + Quote(new_key);
  const Result rekey = Gpuctl("apply --yes --run-dir " + RunDir("rekey"), rekeyed, env);
  ASSERT_EQ(rekey.status, 0) << rekey.out;
  for (const std::string& node : kSlurmNodes) {
    EXPECT_EQ(KeyBase64(node), new_key) << node;
  }
  EXPECT_TRUE(PollUntil(std::chrono::seconds(30), [&] { return Sinfo() == want; })) << Sinfo();
  EXPECT_EQ(lab_->Ssh("master1", "srun -N2 -p all true").status, 0);
  EXPECT_FALSE(Leaks(new_key, rekey, RunDir("rekey")));
  const Result settled = Gpuctl("apply --yes --run-dir " + RunDir("settled"), rekeyed, env);
  EXPECT_EQ(ChangesIn(RunDir("settled")), 0) << settled.out;

  // Day 2: a driver branch migration (550 to 570) on the running cluster,
  // while a job runs on worker1 (issue 16, item 5). The driver's change
  // reboots, so each worker is drained on the controller in turn, worker1
  // only once its job ended on its own; the old branch removed, the new one
  // installed and held; rebooted; resumed once its probes are green. The
  // job writes to the node's disk when it ends, so a reboot under it would
  // leave no file.
  const std::string branch570 = (fs::path(lab_->Env("LAB_STATE")) / "branch-570.yaml").string();
  const Result edited = test::WriteWithVersion(rekeyed, branch570, "driver_branch", "570");
  ASSERT_EQ(edited.status, 0) << edited.out;
  const Result job_id = lab_->Ssh(
      "master1", "sbatch --parsable -p all -w worker1 --wrap 'sleep 20; date +%s >/root/job-done'");
  ASSERT_EQ(job_id.status, 0) << job_id.out;
  EXPECT_TRUE(PollUntil(std::chrono::seconds(30), [&] {
    return Trim(lab_->Ssh("master1", "squeue -h -w worker1 -t RUNNING -o %i").out) ==
           Trim(job_id.out);
  }));
  const Result rolled = Gpuctl("apply --yes --run-dir " + RunDir("rolling"), branch570, env);
  ASSERT_EQ(rolled.status, 0) << rolled.out;
  for (const char* node : {"worker1", "worker2"}) {
    SCOPED_TRACE(node);
    const std::string n = node;
    const auto drained = rolled.out.find(n + ": State=DRAIN (Reason=gpuctl apply)");
    const auto emptied = rolled.out.find(n + ": no jobs left");
    const auto resumed = rolled.out.find(n + ": State=RESUME");
    ASSERT_NE(drained, std::string::npos) << rolled.out;
    ASSERT_NE(emptied, std::string::npos) << rolled.out;
    ASSERT_NE(resumed, std::string::npos) << rolled.out;
    EXPECT_LT(drained, emptied);
    EXPECT_LT(emptied, resumed);
  }
  // Never both out of service at once: worker2's drain starts after worker1's resume, or the other
  // way round.
  const auto first_resume =
      std::min(rolled.out.find("worker1: State=RESUME"), rolled.out.find("worker2: State=RESUME"));
  const auto second_drain =
      std::max(rolled.out.find("worker1: State=DRAIN"), rolled.out.find("worker2: State=DRAIN"));
  EXPECT_LT(first_resume, second_drain) << rolled.out;
  EXPECT_NE(Trim(lab_->Ssh("worker1", "cat /root/job-done").out), "") << "the job did not end";
  EXPECT_TRUE(PollUntil(std::chrono::seconds(60), [&] { return Sinfo() == want; })) << Sinfo();
  // Branch 570 loaded on both families, nothing of 550 left installed or
  // held, and Slurm still hands out all eight GPUs of each.
  for (const char* node : {"worker1", "worker2"}) {
    SCOPED_TRACE(node);
    EXPECT_EQ(test::LoadedDriver(*lab_, node), "570.86.15");
    EXPECT_EQ(test::PackagesOfBranch(*lab_, node, "550"), "");
  }
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "apt-mark showhold | grep -c 550 || true").out), "0");
  EXPECT_EQ(Trim(lab_->Ssh("worker2", "rpm -q --qf '%{VERSION}' cuda-drivers").out), "570.86.15");
  for (const auto& [partition, node] :
       {std::pair{"a100", "worker1"}, std::pair{"h100", "worker2"}}) {
    const Result gpus = lab_->Ssh(
        "master1", std::string("timeout 120 srun -p ") + partition + " --gres=gpu:8 hostname");
    EXPECT_EQ(Trim(gpus.out), node) << partition;
  }

  // The workers' NFS mounts came back from fstab after their reboots, with
  // the data; and after the server's own reboot.
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "cat /data/shared/from-worker2").out), token + "-w2");
  EXPECT_EQ(Trim(lab_->Ssh("worker2", "cat /data/shared/from-worker1").out), token + "-w1");
  ASSERT_EQ(Shell(lab_->Tool("reboot storage1 --wait") + " >/dev/null 2>&1").status, 0);
  EXPECT_TRUE(PollUntil(std::chrono::seconds(30), [&] {
    return Trim(lab_->Ssh("worker2", "cat /data/shared/from-worker1 2>/dev/null").out) ==
           token + "-w1";
  }));
  // An export whose clients exclude the lab: the server refuses the mount.
  // The admin's line stays beside gpuctl's block, and check is still green.
  ASSERT_EQ(lab_->Ssh("storage1",
                      "mkdir -p /data/private && echo '/data/private 192.0.2.1/32(rw)' >> "
                      "/etc/exports && exportfs -ra && systemctl reload nfs-server")
                .status,
            0);
  const Result denied = lab_->Ssh("worker1",
                                  "mkdir -p /mnt/private && mount -t nfs storage1:/data/private "
                                  "/mnt/private 2>&1");
  EXPECT_NE(denied.status, 0);
  EXPECT_NE(denied.out.find("access denied by server"), std::string::npos) << denied.out;
  EXPECT_NE(lab_->Ssh("worker1", "findmnt -n -M /mnt/private").status, 0);
  const Result last_check = Gpuctl("check", branch570, env);
  EXPECT_EQ(last_check.status, 0) << last_check.out;
  EXPECT_EQ(Trim(lab_->Ssh("storage1", "grep -c '^/data/private ' /etc/exports").out), "1");

  // Day 2: removing worker2 (the Rocky worker) with `state: absent`, while a
  // job runs on it (issue 16, item 3). The plan shows worker2's removal
  // steps and nothing else there; apply drains it on the controller and
  // waits for the job, stops its slurmd, lets go of its NFS mount, and then
  // writes slurm.conf and /etc/hosts without it on the nodes that stay. It is
  // never resumed.
  const std::string removed = (fs::path(lab_->Env("LAB_STATE")) / "without-worker2.yaml").string();
  const Result marked = test::WriteWithoutNode(branch570, removed, "worker2", /*absent=*/true);
  ASSERT_EQ(marked.status, 0) << marked.out;
  const Result last_job = lab_->Ssh(
      "master1", "sbatch --parsable -p all -w worker2 --wrap 'sleep 15; date +%s >/root/job-done'");
  ASSERT_EQ(last_job.status, 0) << last_job.out;
  EXPECT_TRUE(PollUntil(std::chrono::seconds(30), [&] {
    return Trim(lab_->Ssh("master1", "squeue -h -w worker2 -t RUNNING -o %i").out) ==
           Trim(last_job.out);
  }));
  const Result removal_plan = Gpuctl("plan", removed, env);
  EXPECT_EQ(removal_plan.status, 2) << removal_plan.out;
  test::StepsByNode removal = test::PlannedSteps(removal_plan.out);
  EXPECT_EQ(removal["worker2"], (std::set<std::string>{"~ slurm.leave", "~ nfs.leave"}))
      << removal_plan.out;
  EXPECT_EQ(removal["worker1"], (std::set<std::string>{"~ os.hosts", "~ slurm.config"}))
      << removal_plan.out;
  EXPECT_EQ(removal["storage1"], (std::set<std::string>{"~ os.hosts"})) << removal_plan.out;
  const Result remove = Gpuctl("apply --yes --run-dir " + RunDir("remove"), removed, env);
  ASSERT_EQ(remove.status, 0) << remove.out;
  const auto drained_w2 = remove.out.find("worker2: State=DRAIN (Reason=gpuctl apply)");
  const auto emptied_w2 = remove.out.find("worker2: no jobs left");
  ASSERT_NE(drained_w2, std::string::npos) << remove.out;
  ASSERT_NE(emptied_w2, std::string::npos) << remove.out;
  EXPECT_LT(drained_w2, emptied_w2);
  EXPECT_EQ(remove.out.find("worker2: State=RESUME"), std::string::npos) << remove.out;
  EXPECT_NE(Trim(lab_->Ssh("worker2", "cat /root/job-done").out), "") << "the job did not end";
  EXPECT_EQ(test::DisruptedNodes(RunDir("remove")), std::set<std::string>{"worker2"});
  EXPECT_TRUE(PollUntil(std::chrono::seconds(60), [&] { return Sinfo() == "worker1 idle gpu:8"; }))
      << Sinfo();
  EXPECT_EQ(
      Trim(lab_->Ssh("worker2", "systemctl is-active slurmd; systemctl is-enabled slurmd").out),
      "inactive\ndisabled");
  EXPECT_NE(lab_->Ssh("worker2", "findmnt -n -M /data/shared").status, 0);
  EXPECT_EQ(Trim(lab_->Ssh("worker2", "grep -c 'gpuctl' /etc/fstab || true").out), "0");
  for (const char* node : {"master1", "worker1", "storage1"}) {
    EXPECT_EQ(Trim(lab_->Ssh(node,
                             "sed -n '/^# BEGIN gpuctl$/,/^# END gpuctl$/p' /etc/hosts | "
                             "grep -cw worker2 || true")
                       .out),
              "0")
        << node;
  }
  EXPECT_EQ(Trim(lab_->Ssh("master1", "grep -c worker2 /etc/slurm/slurm.conf || true").out), "0");
  EXPECT_EQ(lab_->Ssh("master1", "timeout 120 srun -p all --gres=gpu:8 hostname").out, "worker1\n");
  const Result after_removal = Gpuctl("plan", removed, env);
  EXPECT_EQ(after_removal.status, 0) << after_removal.out;

  // MIG on a Slurm node (issue 11, item 4): two of worker1's GPUs split
  // into a 3g.40gb and two 1g.10gb instances each. apply turns MIG mode on
  // (pending under nvidia-persistenced: worker1 drains and reboots), makes
  // the instances, and gres.conf names each MIG device by its profile with
  // the /dev/nvidia-caps nodes the driver published for it; the six whole
  // GPUs are typed by their model. The real slurmd accepts the files and
  // slurmctld schedules each type.
  const std::string mig = (fs::path(lab_->Env("LAB_STATE")) / "mig.yaml").string();
  ASSERT_EQ(Shell("python3 -c " +
                  Quote("import sys, yaml\n"
                        "doc = yaml.safe_load(open(sys.argv[1]))\n"
                        "for n in doc['nodes']:\n"
                        "    if n['name'] == 'worker1':\n"
                        "        n['hardware']['gpus']['mig'] = [{'gpus': '0-1', 'instances': "
                        "{'3g.40gb': 1, '1g.10gb': 2}}]\n"
                        "yaml.safe_dump(doc, open(sys.argv[2], 'w'), sort_keys=False)\n") +
                  " " + Quote(removed) + " " + Quote(mig))
                .status,
            0);
  const Result mig_apply = Gpuctl("apply --yes --run-dir " + RunDir("mig"), mig, env);
  ASSERT_EQ(mig_apply.status, 0) << mig_apply.out;
  const std::string mig_gres = "worker1 idle gpu:1g.10gb:4,gpu:3g.40gb:2,gpu:a100-sxm4-80gb:6";
  // sinfo's gres without the socket fields, sorted: slurmctld keeps its own order.
  const auto sinfo_gres = [&] {
    return Trim(lab_->Ssh("master1",
                          "sinfo -N -h -o '%N %T %G' | sed 's/([^)]*)//g' | "
                          "while read -r n st g; do echo \"$n $st $(echo \"$g\" | tr , '\\n' | "
                          "sort | paste -sd, -)\"; done | sort -u")
                    .out);
  };
  EXPECT_TRUE(PollUntil(std::chrono::seconds(60), [&] { return sinfo_gres() == mig_gres; }))
      << lab_->Ssh("master1", "sinfo -N -o '%N %T %G %E'; cat /etc/slurm/gres.conf").out;
  EXPECT_EQ(Trim(lab_->Ssh("worker1",
                           "grep -c 'Type=1g.10gb MultipleFiles=/dev/nvidia[01],"
                           "/dev/nvidia-caps/nvidia-cap[0-9]*,/dev/nvidia-caps/"
                           "nvidia-cap[0-9]*$' /etc/slurm/gres.conf")
                     .out),
            "4");
  for (const char* gres : {"gpu:1g.10gb:4", "gpu:3g.40gb:1", "gpu:a100-sxm4-80gb:6"}) {
    EXPECT_EQ(lab_->Ssh("master1",
                        std::string("timeout 120 srun -p all --gres=") + gres + " hostname 2>&1")
                  .out,
              "worker1\n")
        << gres;
  }
  const Result mig_again = Gpuctl("plan", mig, env);
  EXPECT_EQ(mig_again.status, 0) << mig_again.out;

  // Day 2: `gpuctl reset --packages` of every node (issue 16, item 7),
  // worker2 (removed above) included: the cluster goes down and each node
  // is put back as it was before gpuctl, apt and dnf alike. Without a
  // terminal or --yes it shows the plan and changes nothing.
  const Result asked = Gpuctl("reset --packages", removed, env);
  EXPECT_EQ(asked.status, 1) << asked.out;
  test::StepsByNode undo = test::PlannedSteps(asked.out);
  EXPECT_TRUE(undo["master1"].count("~ slurm.leave") > 0) << asked.out;
  for (const char* node : {"master1", "worker1", "worker2", "storage1"}) {
    for (const char* step : {"~ reset.files", "~ reset.packages"}) {
      EXPECT_TRUE(undo[node].count(step) > 0) << node << " " << step << "\n" << asked.out;
    }
  }
  EXPECT_EQ(Trim(lab_->Ssh("master1", "systemctl is-active slurmctld").out), "active");
  const Result reset = Gpuctl("reset --yes --packages --run-dir " + RunDir("reset"), removed, env);
  ASSERT_EQ(reset.status, 0) << reset.out;
  for (const char* node : {"master1", "worker1", "worker2", "storage1"}) {
    // hosts and fstab as they were, and exactly the packages there were.
    EXPECT_EQ(Pristine(*lab_, node), pristine[node]) << node;
  }
  // The MUNGE key gpuctl created on Rocky is gone; on Ubuntu the package's
  // own (its postinst makes one) is back.
  EXPECT_NE(lab_->Ssh("worker2", "test -e /etc/munge/munge.key").status, 0);
  EXPECT_EQ(
      lab_->Ssh("worker1", "cmp /etc/munge/munge.key /var/lib/gpuctl/backup/etc/munge/munge.key")
          .status,
      0);
  EXPECT_NE(lab_->Ssh("master1", "systemctl is-active slurmctld").status, 0);
  EXPECT_NE(lab_->Ssh("worker1", "findmnt -n -M /data/shared").status, 0);
  // The admin's export line outlives gpuctl's block (beside the package's
  // comments); the key gpuctl wrote is kept aside, mode and all.
  EXPECT_EQ(Trim(lab_->Ssh("storage1", "grep -v '^#' /etc/exports").out),
            "/data/private 192.0.2.1/32(rw)");
  EXPECT_EQ(Trim(lab_->Ssh("worker1", "stat -c %a /var/lib/gpuctl/reset/etc/munge/munge.key").out),
            "400");
  // A second reset finds nothing to undo.
  const Result second = Gpuctl("reset --yes --packages", removed, env);
  EXPECT_EQ(second.status, 0) << second.out;
  EXPECT_NE(
      second.out.find("Nothing to reset: what gpuctl set up on these nodes is already undone."),
      std::string::npos)
      << second.out;
}

}  // namespace
}  // namespace gpuctl
