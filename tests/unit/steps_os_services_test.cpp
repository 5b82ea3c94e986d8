// The OS service steps (playbooks/15-os-services.yaml) read chronyc, ufw,
// firewall-cmd and getenforce as the real tools answer: real captures from
// the lab's nodes (tests/fixtures/chronyc/, tests/fixtures/ufw/; see their
// README.md) and firewalld's documented formats.
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

// The addresses of the lab in which the chronyc samples were captured: the
// master served 198.18.241.10, worker1 followed it.
std::string OsServicesInventory(const std::string& policy = "") {
  return "cluster: t\nnetwork: {subnet: 198.18.241.0/24}\n" + policy +
         "nodes:\n"
         "  - {name: m, address: 198.18.241.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - {name: w, address: 198.18.241.11, os: ubuntu-22.04, roles: [worker]}\n"
         "  - {name: r, address: 198.18.241.12, os: rocky-9, roles: [worker]}\n";
}

bool OsServicesHas(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// chronyc answering `tracking` and `sources` from two fixtures; the service
// active; sleep instant (the verify waits for the source to be selected).
void Chrony(StepHarness& h, const std::string& tracking, const std::string& sources) {
  h.Stub("chronyc", "case \"$*\" in\n  *tracking*) cat '" + StepHarness::Fixture(tracking) +
                        "' ;;\n  *sources*) cat '" + StepHarness::Fixture(sources) + "' ;;\nesac");
  h.StubOutput("systemctl", "active\n");
  h.Stub("sleep", "exit 0");
}

TEST(OsServicesSteps, TimeSyncVerifyPassesWhenTheMasterIsTheSelectedSource) {
  StepHarness h(OsServicesInventory());
  Chrony(h, "chronyc/tracking-synced.txt", "chronyc/sources-csv-synced.txt");
  const auto run = h.Verify("os.time-sync", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(OsServicesSteps, TimeSyncVerifyNamesAMasterNotYetReached) {
  StepHarness h(OsServicesInventory());
  Chrony(h, "chronyc/tracking-not-synchronised.txt", "chronyc/sources-csv-unreached.txt");
  const auto run = h.Verify("os.time-sync", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(OsServicesHas(run.out, "198.18.241.10 is a source but not selected (state '?')"))
      << run.out;
}

TEST(OsServicesSteps, TimeSyncVerifyNamesAMasterMissingFromTheSources) {
  StepHarness h(OsServicesInventory());
  // The master's own source list (no upstream in the lab) is empty.
  Chrony(h, "chronyc/tracking-master-local.txt", "chronyc/sources-csv-master.txt");
  const auto run = h.Verify("os.time-sync", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(OsServicesHas(run.out, "198.18.241.10 is not among chronyd's sources")) << run.out;
}

TEST(OsServicesSteps, TimeSyncVerifyOnTheMasterNeedsOnlyARunningDaemon) {
  StepHarness h(OsServicesInventory());
  Chrony(h, "chronyc/tracking-master-local.txt", "chronyc/sources-csv-master.txt");
  const auto run = h.Verify("os.time-server", "m");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(OsServicesSteps, TimeSyncVerifyReportsADaemonThatDoesNotAnswer) {
  StepHarness h(OsServicesInventory());
  h.StubOutput("systemctl", "active\n");
  h.StubFixture("chronyc", "chronyc/no-daemon.txt", 1);
  const auto run = h.Verify("os.time-sync", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(OsServicesHas(run.out, "chronyc tracking fails: 506 Cannot talk to daemon"))
      << run.out;
}

// chrony.conf as an admin would write it by hand for an air-gapped site
// whose master follows two site servers.
constexpr const char* kMasterChronyConf =
    R"(# Managed by gpuctl (os.time-sync): the master keeps the cluster's time.
server ntp1.example.org iburst
server 10.0.0.5 iburst
# Serve the cluster even while no upstream server is reachable.
local stratum 10
allow 198.18.241.0/24
driftfile /var/lib/chrony/chrony.drift
makestep 1 3
rtcsync
logdir /var/log/chrony
)";

constexpr const char* kWorkerChronyConf =
    R"(# Managed by gpuctl (os.time-sync): every node follows the master.
server 198.18.241.10 iburst
driftfile /var/lib/chrony/chrony.drift
makestep 1 3
rtcsync
logdir /var/log/chrony
)";

TEST(OsServicesSteps, TheMasterFollowsTheInventorysNtpServersAndTheOthersTheMaster) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  const std::string differs = "/etc/chrony/chrony.conf differs from gpuctl's";
  std::string inventory = OsServicesInventory();
  const std::string network = "network: {subnet: 198.18.241.0/24}";
  inventory.replace(
      inventory.find(network), network.size(),
      "network: {subnet: 198.18.241.0/24, ntp_servers: [ntp1.example.org, 10.0.0.5]}");
  for (const bool site_servers : {true, false}) {
    SCOPED_TRACE(site_servers ? "ntp_servers" : "no ntp_servers");
    StepHarness h(site_servers ? inventory : OsServicesInventory());
    h.StubOutput("dpkg-query", "install ok installed");
    h.StubOutput("systemctl", "active\n");
    h.File("/etc/chrony/chrony.conf", kMasterChronyConf);
    // The file check passes (and the probe goes on) only where the inventory
    // names the servers; without them the master follows pool.ntp.org.
    EXPECT_EQ(OsServicesHas(h.Probe("os.time-server", "m").out, differs), !site_servers);
    h.File("/etc/chrony/chrony.conf", kWorkerChronyConf);
    EXPECT_FALSE(OsServicesHas(h.Probe("os.time-sync", "w").out, differs));
  }
}

TEST(OsServicesSteps, FirewallProbeReadsTheLiveUfwRules) {
  StepHarness h(OsServicesInventory());
  // Captured after a worker's os.firewall: SSH and NodePorts open, every
  // node and the pod network trusted.
  h.StubFixture("ufw", "ufw/status-active.txt");
  EXPECT_EQ(h.Probe("os.firewall", "w").status, 0);

  // The same rules on the master lack the API server's port.
  const auto run = h.Probe("os.firewall", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(OsServicesHas(run.out, "not open: 6443/tcp\n")) << run.out;
  EXPECT_FALSE(OsServicesHas(run.out, "not trusted")) << run.out;
}

TEST(OsServicesSteps, FirewallProbeWantsTheClusterTrustedNotJustPorts) {
  // An earlier layout: a list of ports open to anyone, no trusted source.
  // NCCL, MPI and srun use ports chosen at run time, so that is not enough.
  StepHarness h(OsServicesInventory());
  h.StubFixture("ufw", "ufw/status-ports-only.txt");
  const auto run = h.Probe("os.firewall", "w");
  EXPECT_EQ(run.status, 1);
  // The three nodes fold into .10/31 (.10 and .11) and .12: a rule per
  // block of consecutive addresses, not per node.
  EXPECT_TRUE(OsServicesHas(run.out, "not trusted: 198.18.241.10/31 198.18.241.12 10.244.0.0/16\n"))
      << run.out;
  EXPECT_FALSE(OsServicesHas(run.out, "not open")) << run.out;

  // Without Kubernetes the pod network is not trusted and no NodePort opened.
  StepHarness slurm(OsServicesInventory("orchestrator: slurm\n"));
  slurm.StubFixture("ufw", "ufw/status-ports-only.txt");
  const auto without = slurm.Probe("os.firewall", "w");
  EXPECT_TRUE(OsServicesHas(without.out, "not trusted: 198.18.241.10/31 198.18.241.12\n"))
      << without.out;
}

TEST(OsServicesSteps, FirewallProbeLeavesAnInactiveUfwAlone) {
  StepHarness h(OsServicesInventory());
  h.StubFixture("ufw", "ufw/status-inactive.txt");
  EXPECT_EQ(h.Probe("os.firewall", "m").status, 0);
}

TEST(OsServicesSteps, FirewallProbeWantsUfwOffWhenThePolicySaysSo) {
  StepHarness h(OsServicesInventory("policy: {disable_firewall: true}\n"));
  h.StubFixture("ufw", "ufw/status-active.txt");
  h.StubOutput("systemctl", "enabled\n");
  auto run = h.Probe("os.firewall", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(OsServicesHas(run.out, "ufw is active and enabled at boot (want off)")) << run.out;

  h.StubFixture("ufw", "ufw/status-inactive.txt");
  h.StubOutput("systemctl", "disabled\n", 1);
  run = h.Probe("os.firewall", "w");
  EXPECT_EQ(run.status, 0) << run.out;
}

// firewall-cmd as documented: --state prints "running"; --list-ports and
// --list-sources one line of space-separated items, port ranges with '-'.
struct FirewalldLists {
  std::string ports, sources;
};
void Firewalld(StepHarness& h, const FirewalldLists& runtime, const FirewalldLists& permanent) {
  h.Stub("firewall-cmd",
         "case \"$*\" in\n  --state) echo running ;;\n"
         "  *--permanent*--list-sources*) echo '" +
             permanent.sources + "' ;;\n  *--list-sources*) echo '" + runtime.sources +
             "' ;;\n  *--permanent*) echo '" + permanent.ports + "' ;;\n  *--list-ports*) echo '" +
             runtime.ports + "' ;;\nesac");
}

TEST(OsServicesSteps, FirewallProbeNeedsEachItemNowAndAfterAReload) {
  const FirewalldLists all{"22/tcp 30000-32767/tcp",
                           "198.18.241.10/31 198.18.241.12 10.244.0.0/16"};
  StepHarness h(OsServicesInventory());
  Firewalld(h, all, all);
  EXPECT_EQ(h.Probe("os.firewall", "r").status, 0);

  // Opened and trusted for now only: lost at the next reload.
  Firewalld(h, all, {"22/tcp", "198.18.241.10/31"});
  const auto run = h.Probe("os.firewall", "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(
      OsServicesHas(run.out, "not open: 30000:32767/tcp\nnot trusted: 198.18.241.12 10.244.0.0/16"))
      << run.out;
}

TEST(OsServicesSteps, FirewallProbeIsSatisfiedWithoutAFirewall) {
  StepHarness h(OsServicesInventory());
  // Neither ufw nor firewall-cmd on PATH (this host has neither).
  if (std::system("command -v ufw >/dev/null || command -v firewall-cmd >/dev/null") == 0) {
    GTEST_SKIP() << "this host has a firewall tool on PATH";
  }
  EXPECT_EQ(h.Probe("os.firewall", "w").status, 0);
  EXPECT_EQ(h.Probe("os.firewall", "r").status, 0);
}

TEST(OsServicesSteps, SelinuxProbeShowsTheModeAndActsOnlyWhenDisabledByPolicy) {
  StepHarness left(OsServicesInventory());
  left.StubOutput("getenforce", "Enforcing\n");
  auto run = left.Probe("os.selinux", "r");
  EXPECT_EQ(run.status, 0);
  EXPECT_TRUE(OsServicesHas(run.out, "SELinux is Enforcing")) << run.out;

  StepHarness off(OsServicesInventory("policy: {disable_selinux: true}\n"));
  off.StubOutput("getenforce", "Enforcing\n");
  EXPECT_EQ(off.Probe("os.selinux", "r").status, 1);
  off.StubOutput("getenforce", "Permissive\n");
  EXPECT_EQ(off.Probe("os.selinux", "r").status, 0);
}

}  // namespace
}  // namespace gpuctl
