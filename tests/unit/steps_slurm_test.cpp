// slurm.ready (playbooks/70-slurm.yaml) reads `sinfo -N -h -o '%N %T %G %E'`
// as the real Slurm 22.05 prints it: captures from the lab's real slurmctld
// (tests/fixtures/slurm/README.md) through a stubbed sinfo.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

// The lab's slurm profile: master1, worker1 and worker2 with `gpus` GPUs each
// (the captures show gpu:8), and `extra` more worker lines.
std::string SlurmInventory(int gpus = 8, const std::string& extra = "") {
  std::string worker =
      "    roles: [worker]\n    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", "
      "count: " +
      std::to_string(gpus) + "}}\n";
  return "cluster: t\norchestrator: slurm\nnodes:\n"
         "  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: worker1\n    address: 198.18.0.11\n    os: ubuntu-22.04\n" +
         worker + "  - name: worker2\n    address: 198.18.0.12\n    os: rocky-9\n" + worker + extra;
}

class SlurmReadyTest : public ::testing::Test {
 protected:
  // slurmctld is active unless a test says otherwise.
  static void Use(StepHarness& h, const std::string& sinfo_fixture, int sinfo_status = 0) {
    h.StubOutput("systemctl", "", 0);
    h.StubFixture("sinfo", "slurm/" + sinfo_fixture, sinfo_status);
  }
};

TEST_F(SlurmReadyTest, PassesWhenEveryWorkerIsIdleWithItsGpus) {
  StepHarness h(SlurmInventory());
  Use(h, "sinfo-idle.txt");
  const auto run = h.Probe("slurm.ready", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

// Each capture of a worker not ready, and the one line the probe makes of it.
struct NotReady {
  const char* fixture;
  const char* line;
};

TEST_F(SlurmReadyTest, NamesEachWorkerNotReadyWithSlurmsStateAndReason) {
  const NotReady cases[] = {
      {"sinfo-down-rebooted.txt", "worker2 is down (Node unexpectedly rebooted)\n"},
      {"sinfo-drained.txt", "worker2 is drained* (admin maintenance)\n"},
      {"sinfo-not-responding.txt", "worker2 is not responding (idle*)\n"},
  };
  for (const NotReady& c : cases) {
    SCOPED_TRACE(c.fixture);
    StepHarness h(SlurmInventory());
    Use(h, c.fixture);
    const auto run = h.Probe("slurm.ready", "master1");
    EXPECT_EQ(run.status, 1);
    EXPECT_EQ(run.out, c.line);
  }
}

TEST_F(SlurmReadyTest, ComparesTheGresWithTheInventorysGpuCount) {
  StepHarness h(SlurmInventory(4));
  Use(h, "sinfo-idle.txt");
  const auto run = h.Probe("slurm.ready", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "worker1 has gres gpu:8 (want gpu:4); worker2 has gres gpu:8 (want gpu:4)\n");
}

TEST_F(SlurmReadyTest, NamesAWorkerSlurmDoesNotKnow) {
  StepHarness h(SlurmInventory(8,
                               "  - {name: worker3, address: 198.18.0.13, os: rocky-9, roles: "
                               "[worker]}\n"));
  Use(h, "sinfo-idle.txt");
  const auto run = h.Probe("slurm.ready", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "worker3 is not in sinfo\n");
}

TEST_F(SlurmReadyTest, ReportsSinfosOwnErrorWhenTheControllerDoesNotAnswer) {
  StepHarness h(SlurmInventory());
  Use(h, "sinfo-no-controller.txt", 1);
  const auto run = h.Probe("slurm.ready", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "sinfo fails: slurm_load_partitions: Unable to contact slurm controller (connect "
            "failure)\n");
}

TEST_F(SlurmReadyTest, IsUnknownUntilSlurmctldRuns) {
  StepHarness h(SlurmInventory());
  Use(h, "sinfo-idle.txt");
  h.StubOutput("systemctl", "", 3);  // is-active: inactive
  const auto run = h.Probe("slurm.ready", "master1");
  EXPECT_EQ(run.status, 3) << run.out;
}

// The lab's slurm profile with worker1's GPUs 0-1 split into a 3g.40gb and
// two 1g.10gb each (the captures' layout: tests/fixtures/slurm/README.md).
std::string SlurmMigInventory() {
  return "cluster: t\norchestrator: slurm\nnodes:\n"
         "  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: worker1\n    address: 198.18.0.11\n    os: ubuntu-22.04\n"
         "    roles: [worker]\n    hardware:\n      gpus:\n"
         "        model: NVIDIA A100-SXM4-80GB\n        count: 8\n"
         "        mig: [{gpus: 0-1, instances: {3g.40gb: 1, 1g.10gb: 2}}]\n"
         "  - name: worker2\n    address: 198.18.0.12\n    os: rocky-9\n    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}}\n";
}

// A MIG node's typed records as slurmctld lists them (in its own order; the
// probe compares them as a set).
TEST_F(SlurmReadyTest, TypedMigGresOfTheInventoryIsReady) {
  StepHarness h(SlurmMigInventory());
  Use(h, "sinfo-mig.txt");
  const auto run = h.Probe("slurm.ready", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(SlurmReadyTest, AMigNodeReportingFewerDevicesIsNamedWithSlurmsReason) {
  StepHarness h(SlurmMigInventory());
  Use(h, "sinfo-mig-short.txt");
  const auto run = h.Probe("slurm.ready", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "worker1 is inval (gres/gpu count reported lower than configured (11 < 12))\n");
}

// A node slurmctld drained for reporting too few GPUs is resumed by the
// change once it reports them all (the capture: gres.conf fixed and slurmd
// restarted); one still short, or drained for another reason, is left.
TEST_F(SlurmReadyTest, TheChangeResumesANodeDrainedForGresOnceItReportsThemAll) {
  struct Case {
    std::string fixture;
    std::string inventory;
    std::string resumed;  // what the change asked scontrol
  };
  for (const Case& c : {Case{"sinfo-mig-drained-fixed.txt", SlurmMigInventory(),
                             "update nodename=worker1 state=resume\n"},
                        Case{"sinfo-drained.txt", SlurmInventory(), ""}}) {
    SCOPED_TRACE(c.fixture);
    StepHarness h(c.inventory);
    h.StubOutput("systemctl", "", 0);
    // sinfo answers from the capture until scontrol resumes the node, then
    // as the idle capture; -o '%T' prints the states alone.
    const std::string drained = StepHarness::Fixture("slurm/" + c.fixture);
    const std::string idle = StepHarness::Fixture("slurm/sinfo-mig.txt");
    h.Stub("sinfo", "f='" + drained + "'\n[ ! -e \"$HOME/resumed\" ] || f='" + idle +
                        "'\ncase \"$*\" in *'%N %T %G %E'*) cat \"$f\" ;; *) awk '{ print $2 }' "
                        "\"$f\" ;; esac");
    h.Stub("scontrol", "echo \"$*\" >>\"$HOME/scontrol\"\n: >\"$HOME/resumed\"");
    h.Stub("sleep", ":");
    const auto run = h.Change("slurm.ready", "master1");
    std::ifstream log(h.dir() / "scontrol");
    std::ostringstream resumed;
    if (log) resumed << log.rdbuf();
    EXPECT_EQ(resumed.str(), c.resumed);
    EXPECT_EQ(run.status, c.resumed.empty() ? 1 : 0) << run.out;
  }
}

// slurm.pmix and validate.slurm-pmix (srun --mpi=pmix), read from the real
// srun's output (fixtures/slurm/srun-pmix-*.txt, Debian 12's Slurm 22.05).
class SlurmPmixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v srun >/dev/null 2>&1") == 0) {
      GTEST_SKIP() << "this machine has Slurm's srun: a node without Slurm cannot be shown";
    }
    if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  }
  // Where Debian's Slurm keeps its plugins.
  static constexpr const char* kPlugin = "/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so";
};

TEST_F(SlurmPmixTest, KnownAfterApplyBeforeSlurmIsInstalled) {
  StepHarness h(SlurmInventory());
  const auto run = h.Probe("slurm.pmix", "worker1");
  EXPECT_EQ(run.status, 3) << run.out;
  EXPECT_EQ(
      run.out,
      "Slurm is not installed yet: whether its srun has a PMIx plugin is known after apply\n");
}

TEST_F(SlurmPmixTest, NothingToDoForASlurmBuiltWithoutPmix) {
  StepHarness h(SlurmInventory());
  h.StubOutput("srun", "", 0);
  const auto run = h.Probe("slurm.pmix", "worker1");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out,
            "this Slurm has no PMIx plugin (mpi_pmix.so): srun --mpi=pmix is not available\n");
}

TEST_F(SlurmPmixTest, NeedsTheLibraryThePluginOpens) {
  StepHarness h(SlurmInventory());
  h.StubOutput("srun", "", 0);
  h.File(kPlugin, "");
  h.StubOutput("dpkg-query", "", 1);  // libpmix2 not installed
  const auto run = h.Probe("slurm.pmix", "worker1");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.out.rfind("libpmix2 ", 0), 0U) << run.out;
}

TEST_F(SlurmPmixTest, DeepCheckPassesWithARankOnEveryNode) {
  StepHarness h(SlurmInventory());
  h.File(kPlugin, "");
  h.StubFixture("srun", "slurm/srun-pmix-ranks.txt");  // "1" then "0": either order
  const auto run = h.Probe("validate.slurm-pmix", "master1");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "srun --mpi=pmix: ranks 0 to N-1 on every node of batch (2 nodes)\n");
}

TEST_F(SlurmPmixTest, DeepCheckNamesSlurmsOwnErrorWithoutTheLibrary) {
  StepHarness h(SlurmInventory());
  h.File(kPlugin, "");
  h.StubFixture("srun", "slurm/srun-pmix-no-library.txt", 1);
  const auto run = h.Probe("validate.slurm-pmix", "master1");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.out,
            "srun --mpi=pmix in partition batch (2 nodes) failed (exit 1): srun: error:  "
            "mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:195: pmi/pmix: can not load PMIx library\n");
}

TEST_F(SlurmPmixTest, DeepCheckNamesAMissingRank) {
  StepHarness h(SlurmInventory());
  h.File(kPlugin, "");
  h.StubOutput("srun", "0\n", 0);  // one worker's rank never came
  const auto run = h.Probe("validate.slurm-pmix", "master1");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(
      run.out,
      "srun --mpi=pmix in partition batch (2 nodes) failed (exit 0): ranks '0', want '0 1'\n");
}

}  // namespace
}  // namespace gpuctl
