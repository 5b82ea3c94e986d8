// The recap at the end of an apply, from a run executed over the fake
// transport: a line per node, identical nodes folded, each with how long it
// worked, then how the run ended.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <mutex>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "cluster_builder.h"
#include "converging_nodes.h"
#include "gpuctl/action/apply_action.h"
#include "gpuctl/model/os_release.h"
#include "gpuctl/transport/fake_transport.h"
#include "gpuctl/view/apply_view.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using testing::OnRole;
using testing::SameNode;

class ApplyRecapTest : public ::testing::Test {
 protected:
  ApplyRecapTest() {
    std::vector<Node> nodes = {MakeNode("master1", Role::kMaster)};
    for (int i = 1; i <= 6; ++i) {
      nodes.push_back(MakeNode(fmt::format("gpu{:02}", i), Role::kWorker));
    }
    spec.inventory = MakeInventory(nodes);
    spec.catalog =
        Catalog::FromSteps({MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}),
                            MakeStep("os.time", {Role::kMaster, Role::kWorker}),
                            MakeStep("k8s.join", {Role::kWorker},
                                     {SameNode("os.sysctl"), OnRole("os.sysctl", Role::kMaster)})});
    spec.inventory.path = "/srv/cluster/inventory.yaml";
    spec.inventory_digest = "digest-of-the-inventory";
    // Every node has os.time already; gpu04's join fails.
    fake_nodes.true_everywhere = {"os.time"};
    fake_nodes.change = [](const std::string& node,
                           const std::string& step) -> std::optional<CommandResult> {
      if (node != "gpu04" || step != "k8s.join") {
        return std::nullopt;
      }
      CommandResult r;
      r.exit_status = 1;
      r.err = "kubeadm join: connection refused";
      return r;
    };
    fake_nodes.Attach(transport);
    char dir[] = "/tmp/gpuctl-apply-recap.XXXXXX";
    runs = mkdtemp(dir);
  }
  ~ApplyRecapTest() override { fs::remove_all(runs); }

  Spec spec;
  FakeTransport transport;
  testing::ConvergingNodes fake_nodes;
  fs::path runs;
  ApplyTarget target{"inventory.yaml", "inventory.yaml", std::nullopt};
};

TEST_F(ApplyRecapTest, ARunIsRecappedANodeALineWithIdenticalNodesFolded) {
  NodeTimer timer;
  ApplySettings settings;
  settings.run_dir = (runs / "run").string();
  settings.holder = "user=test host=here pid=1 started=2026-11-24T00:00:00Z";
  ApplyAction action(spec, target, transport, timer, settings);
  action.Prepare();
  action.Apply();
  action.Finish();
  const auto times = timer.Durations();
  // Every node worked in the apply phase (the probes before it do not count).
  EXPECT_EQ(times.size(), 7U);
  const std::string recap = RecapText(action.plan(), spec.inventory, times, 12.5, action.Outcome());
  // Names padded to the longest label.
  EXPECT_NE(recap.find("\n  master1                         ok=1 changed=1 failed=0 blocked=0 "
                       "rebooted=0  "),
            std::string::npos)
      << recap;
  EXPECT_NE(recap.find("\n  gpu[01-03,05-06] (5 identical)  ok=1 changed=2 failed=0 blocked=0 "
                       "rebooted=0  "),
            std::string::npos)
      << recap;
  EXPECT_NE(recap.find("\n  gpu04                           ok=1 changed=1 failed=1 blocked=0 "
                       "rebooted=0  "),
            std::string::npos)
      << recap;
  // 7 os.sysctl + 5 joins changed, gpu04's join failed.
  EXPECT_NE(recap.find("\nApply failed after 12.5s: 12 changed, 1 failed, 0 blocked on 7 nodes.\n"),
            std::string::npos)
      << recap;
  // A line per group: three groups, no line per node.
  std::size_t lines = 0;
  for (char c : recap) {
    lines += c == '\n' ? 1U : 0U;
  }
  EXPECT_EQ(lines, 7U) << recap;  // blank, Recap:, 3 groups, blank, the end
}

}  // namespace
}  // namespace gpuctl
