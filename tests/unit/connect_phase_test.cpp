// The connect phase over the fake transport: a node that cannot be reached
// is failed once, with a hint naming where the inventory declares it and
// what to try, while its plan items carry the bare reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cluster_builder.h"
#include "gpuctl/run/phase.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

using ::testing::HasSubstr;
using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;
using ::testing::Not;

class ConnectPhaseTest : public ::testing::Test {
 protected:
  ConnectPhaseTest() {
    catalog = Catalog::FromSteps({MakeStep("os.sysctl", {Role::kMaster, Role::kWorker})});
    Node worker = MakeNode("worker1", Role::kWorker);
    worker.address = "10.0.0.21";
    worker.ssh.user = "admin";
    worker.ssh.port = 2222;
    worker.where = {"site.yaml", 42, 5};
    inventory = MakeInventory({MakeNode("master1", Role::kMaster), worker});
    plan = Plan::Build(inventory, catalog);
  }

  std::map<std::string, std::string> Connect() {
    Reporter quiet;
    RunContext context(inventory, catalog, plan, transport, quiet);
    Pipeline pipeline;
    pipeline.Add(MakeConnectPhase());
    pipeline.Run(context);
    return context.NodeErrors();
  }

  Inventory inventory;
  Catalog catalog;
  Plan plan;
  FakeTransport transport;
};

TEST_F(ConnectPhaseTest, AnUnreachableNodeGetsAHintNamingItsInventoryLineAndWhatToTry) {
  transport.Unreachable("worker1", ConnectFailure::kUnreachable);
  const auto errors = Connect();
  ASSERT_EQ(errors.count("worker1"), 1U);
  EXPECT_EQ(errors.count("master1"), 0U);
  const std::string& error = errors.at("worker1");
  EXPECT_THAT(error, HasSubstr("hint: is worker1 up, is 10.0.0.21 its address"));
  EXPECT_THAT(error, HasSubstr("declared at site.yaml:42:5"));
  EXPECT_THAT(error, HasSubstr("port 2222 open from here"));
  EXPECT_THAT(error, HasSubstr("Try: ssh -p 2222 admin@10.0.0.21 true"));
  for (const std::size_t id : plan.ItemsOf("worker1")) {
    EXPECT_EQ(plan.items()[id].state, ItemState::kUnreachable);
    EXPECT_THAT(plan.items()[id].detail, Not(HasSubstr("hint"))) << "said once, per node";
  }
}

TEST_F(ConnectPhaseTest, RefusedAuthenticationPointsAtTheUserAndTheKey) {
  transport.Unreachable("worker1", ConnectFailure::kAuth);
  const auto errors = Connect();
  ASSERT_EQ(errors.count("worker1"), 1U);
  EXPECT_THAT(errors.at("worker1"),
              HasSubstr("hint: the node must accept user admin with your default key or "
                        "ssh-agent (declared at site.yaml:42:5)"));
  EXPECT_THAT(errors.at("worker1"), HasSubstr("ssh.identity_file"));
}

TEST_F(ConnectPhaseTest, AChangedHostKeyKeepsItsOwnMessageWithoutAHint) {
  transport.Unreachable("worker1", ConnectFailure::kHostKeyChanged);
  const auto errors = Connect();
  ASSERT_EQ(errors.count("worker1"), 1U);
  EXPECT_THAT(errors.at("worker1"), Not(HasSubstr("hint:")));
}

}  // namespace
}  // namespace gpuctl
