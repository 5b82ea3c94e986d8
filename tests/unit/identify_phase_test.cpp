// The identify and plan phases over the fake transport: what each node's
// os-release says decides whether it is worked on, and with which family's
// steps an `os: auto` node is planned.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "cluster_builder.h"
#include "gpuctl/model/os_release.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/run/prober.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;

class IdentifyPhaseTest : public ::testing::Test {
 protected:
  IdentifyPhaseTest() {
    std::vector<Step> steps = {MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}),
                               MakeStep("os.apt-only", {Role::kWorker}),
                               MakeStep("os.dnf-only", {Role::kWorker})};
    steps[1].families = {OsFamily::kDebian};
    steps[2].families = {OsFamily::kRhel};
    catalog = Catalog::FromSteps(steps);
    // Each node's os-release agrees with the inventory unless a test says
    // otherwise.
    Reports("master1", testing::OsReleaseFixture("ubuntu-22.04"));
    Reports("worker1", testing::OsReleaseFixture("ubuntu-22.04"));
    Reports("worker2", testing::OsReleaseFixture("rocky-9"));
  }

  void Reports(const std::string& node, const std::string& os_release) {
    transport.AddHandler(
        [node, os_release](const std::string& n, const Command& c) -> std::optional<CommandResult> {
          if (n != node || c.script != OsReleaseScript()) return std::nullopt;
          CommandResult r;
          r.exit_status = 0;
          r.out = os_release;
          return r;
        });
  }

  // plan's pipeline: connect, identify, plan, probe.
  void RunPlan() {
    RunContext context(inventory, catalog, plan, transport, quiet);
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase())
        .Add(MakeIdentifyPhase())
        .Add(MakePlanPhase(inventory))
        .Add(MakeProbePhase());
    pipeline.Run(context);
    errors = context.NodeErrors();
  }

  std::vector<std::string> ScriptsOn(const std::string& node) const {
    std::vector<std::string> out;
    for (const auto& r : transport.RecordsFor(node)) out.push_back(r.command.script);
    return out;
  }

  Inventory inventory =
      MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                     MakeNode("worker2", Role::kWorker, OsFamily::kRhel)});
  Catalog catalog;
  FakeTransport transport;
  Reporter quiet;
  Plan plan;
  std::map<std::string, std::string> errors;
};

TEST_F(IdentifyPhaseTest, ReadsOsReleaseOnceOnEachNodeBeforeAnyProbe) {
  RunPlan();
  EXPECT_TRUE(errors.empty());
  for (const char* node : {"master1", "worker1", "worker2"}) {
    const auto scripts = ScriptsOn(node);
    ASSERT_FALSE(scripts.empty()) << node;
    EXPECT_EQ(scripts.front(), OsReleaseScript()) << node;
    EXPECT_EQ(std::count(scripts.begin(), scripts.end(), OsReleaseScript()), 1) << node;
  }
  EXPECT_EQ(plan.Find("worker2", "os.dnf-only")->state, ItemState::kSatisfied);
}

TEST_F(IdentifyPhaseTest, AContradictingNodeIsRefusedAndNamedWhileOthersGoOn) {
  Reports("worker2", testing::OsReleaseFixture("debian-12"));  // declared rocky-9
  RunPlan();
  ASSERT_EQ(errors.count("worker2"), 1U);
  EXPECT_EQ(errors.at("worker2"),
            "the inventory says rocky-9 but /etc/os-release says debian 12 (Debian GNU/Linux 12 "
            "(bookworm)); if the node is right, write os: debian-12 (or os: auto)");
  // Like an unreachable node: none of its items probed, nothing more sent.
  for (const std::size_t id : plan.ItemsOf("worker2")) {
    EXPECT_EQ(plan.items()[id].state, ItemState::kUnreachable) << plan.items()[id].step;
    EXPECT_EQ(plan.items()[id].detail, errors.at("worker2"));
  }
  EXPECT_EQ(ScriptsOn("worker2"), std::vector<std::string>{OsReleaseScript()});
  EXPECT_EQ(errors.size(), 1U);
  EXPECT_EQ(plan.Find("worker1", "os.apt-only")->state, ItemState::kSatisfied);
  EXPECT_EQ(plan.Find("master1", "os.sysctl")->state, ItemState::kSatisfied);
}

TEST_F(IdentifyPhaseTest, AnAutoNodeIsPlannedWithTheFamilyItReports) {
  inventory.nodes[1].os = OsRelease::Auto();  // worker1, which reports Rocky 9
  Reports("worker1", testing::OsReleaseFixture("rocky-9"));
  RunPlan();
  EXPECT_TRUE(errors.empty()) << errors.begin()->second;
  EXPECT_EQ(inventory.nodes[1].os.Name(), "rocky-9");
  EXPECT_EQ(inventory.nodes[1].os.family, OsFamily::kRhel);
  EXPECT_NE(plan.Find("worker1", "os.dnf-only"), nullptr);
  EXPECT_EQ(plan.Find("worker1", "os.apt-only"), nullptr);
  for (const auto& r : transport.RecordsFor("worker1")) {
    if (r.command.script == "probe os.dnf-only") {
      EXPECT_EQ(r.command.env.at("GPUCTL_OS_FAMILY"), "rhel");
    }
  }
}

TEST_F(IdentifyPhaseTest, AnAutoNodeOnAnUnsupportedOsFailsNamingWhatItReported) {
  inventory.nodes[1].os = OsRelease::Auto();
  Reports("worker1", testing::OsReleaseFixture("centos-7"));
  RunPlan();
  ASSERT_EQ(errors.count("worker1"), 1U);
  EXPECT_EQ(errors.at("worker1").rfind("os: auto, but /etc/os-release says centos 7 (CentOS "
                                       "Linux 7 (Core)): centos-7 is end of life",
                                       0),
            0U)
      << errors.at("worker1");
  EXPECT_EQ(ScriptsOn("worker1"), std::vector<std::string>{OsReleaseScript()});
  EXPECT_EQ(errors.size(), 1U);
}

TEST_F(IdentifyPhaseTest, ANodeWithoutOsReleaseFailsSayingSo) {
  transport.AddHandler([](const std::string& n, const Command& c) -> std::optional<CommandResult> {
    if (n != "master1" || c.script != OsReleaseScript()) return std::nullopt;
    CommandResult r;
    r.exit_status = 1;
    r.err = "cat: /usr/lib/os-release: No such file or directory\n";
    return r;
  });
  RunPlan();
  EXPECT_EQ(errors.at("master1"),
            "cannot read /etc/os-release or /usr/lib/os-release: cat: /usr/lib/os-release: No "
            "such file or directory");
  EXPECT_EQ(plan.Find("worker1", "os.sysctl")->state, ItemState::kSatisfied);
}

TEST_F(IdentifyPhaseTest, AnUnreachableNodeIsNotIdentifiedAndStaysUnreachable) {
  transport.Unreachable("worker2");
  RunPlan();
  ASSERT_EQ(errors.count("worker2"), 1U);
  EXPECT_TRUE(transport.RecordsFor("worker2").empty());
  EXPECT_EQ(plan.Find("worker2", "os.sysctl")->state, ItemState::kUnreachable);
}

}  // namespace
}  // namespace gpuctl
