#include "gpuctl/view/plan_view.h"

#include <gtest/gtest.h>

#include <sstream>

#include "cluster_builder.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;

class PlanViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    inventory =
        MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker)});
    catalog = Catalog::FromSteps({MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}),
                                  MakeStep("gpu.driver", {Role::kWorker})});
    plan = Plan::Build(inventory, catalog);
    plan.Find("master1", "os.sysctl")->state = ItemState::kSatisfied;
    plan.Find("worker1", "os.sysctl")->state = ItemState::kNeedsChange;
    plan.Find("worker1", "os.sysctl")->observed = "net.ipv4.ip_forward=0 (want 1)\nmore";
    plan.Find("worker1", "gpu.driver")->state = ItemState::kKnownAfterApply;
  }
  Inventory inventory;
  Catalog catalog;
  Plan plan;
};

TEST_F(PlanViewTest, TextShowsEachNodeItsItemsAndTheSummary) {
  const std::string text = RenderPlanText(plan, inventory, {}, {});
  EXPECT_NE(text.find("master1  "), std::string::npos) << text;
  EXPECT_NE(text.find("  = os.sysctl"), std::string::npos) << text;
  EXPECT_NE(
      text.find("  ~ os.sysctl                      will change: net.ipv4.ip_forward=0 (want 1)\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  ? gpu.driver                     known after apply"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Plan: 2 nodes: 1 to change, 1 ok, 1 known after apply\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("\x1b["), std::string::npos) << "no colour unless asked";
}

TEST_F(PlanViewTest, AChangeThatRebootsSaysSoAndTheSummaryCountsTheNodes) {
  plan.Find("worker1", "gpu.driver")->reboot = true;
  const std::string text = RenderPlanText(plan, inventory, {}, {});
  EXPECT_NE(text.find("  ? gpu.driver                     known after apply [reboots]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", 1 node to reboot\n"), std::string::npos) << text;
  const auto json = PlanToJson(plan, {}, {});
  EXPECT_EQ(json["summary"]["reboot_nodes"], nlohmann::json::array({"worker1"}));
  // Once applied, it no longer announces a reboot.
  plan.Find("worker1", "gpu.driver")->state = ItemState::kApplied;
  EXPECT_EQ(RenderPlanText(plan, inventory, {}, {}).find("[reboots]"), std::string::npos);
}

TEST_F(PlanViewTest, AChangeThatRestartsARuntimeSaysWhichAndASavedPlanKeepsIt) {
  plan.Find("worker1", "os.sysctl")->restarts = kRestartsContainerd | kRestartsKubelet;
  const std::string text = RenderPlanText(plan, inventory, {}, {});
  EXPECT_NE(text.find("  ~ os.sysctl                      will change [restarts containerd, "
                      "kubelet]: net.ipv4.ip_forward=0 (want 1)\n"),
            std::string::npos)
      << text;
  std::ostringstream saved;
  WritePlanJson(saved, plan, {}, {});
  const SavedPlan back = PlanFromJson(nlohmann::json::parse(saved.str()), "plan.json");
  EXPECT_EQ(back.plan.Find("worker1", "os.sysctl")->restarts,
            kRestartsContainerd | kRestartsKubelet);
  EXPECT_EQ(back.plan.Find("master1", "os.sysctl")->restarts, kRestartsNothing);
  // Satisfied: nothing restarts, nothing said.
  plan.Find("worker1", "os.sysctl")->state = ItemState::kSatisfied;
  EXPECT_EQ(RenderPlanText(plan, inventory, {}, {}).find("[restarts"), std::string::npos);
}

TEST_F(PlanViewTest, WhatApplyCannotFixIsMarkedWithItsReason) {
  PlanItem& driver = *plan.Find("worker1", "gpu.driver");
  driver.state = ItemState::kNeedsAttention;
  driver.observed = "7 of 8 GPUs visible";
  const std::string text = RenderPlanText(plan, inventory, {}, {});
  EXPECT_NE(text.find("  ! gpu.driver                     apply cannot fix: 7 of 8 GPUs visible"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1 apply cannot fix"), std::string::npos) << text;
}

TEST_F(PlanViewTest, TextCanHideSatisfiedItems) {
  TextOptions options;
  options.show_ok = false;
  const std::string text = RenderPlanText(plan, inventory, {}, options);
  EXPECT_EQ(text.find("= os.sysctl"), std::string::npos) << text;
}

TEST_F(PlanViewTest, UnreachableNodeIsSaidOnceWithItsError) {
  for (auto id : plan.ItemsOf("worker1")) {
    plan.items()[id].state = ItemState::kUnreachable;
  }
  const std::string text = RenderPlanText(plan, inventory, {{"worker1", "host key changed"}}, {});
  EXPECT_NE(text.find("  ! host key changed\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpu.driver"), std::string::npos) << text;
}

TEST_F(PlanViewTest, ALongValueIsWrittenOnceAndReadBackIntoEveryItem) {
  // Every node's hosts line: as long as the cluster is large.
  std::vector<Step> steps = catalog.steps();
  steps[0].change_params = {"hosts"};
  for (int i = 0; i < 20; ++i) {
    Node n = inventory.nodes.back();
    n.name = "extra" + std::to_string(i);
    inventory.nodes.push_back(n);
  }
  catalog = Catalog::FromSteps(steps);
  plan = Plan::Build(inventory, catalog);
  std::ostringstream text;
  WritePlanJson(text, plan, {}, {});
  const std::string hosts = plan.Find("master1", "os.sysctl")->env.at("GPUCTL_HOSTS").str();
  ASSERT_GT(hosts.size(), 128U);
  // Once, under shared_values, however many items hold it.
  const std::string saved = text.str();
  EXPECT_EQ(saved.find(hosts), saved.rfind(hosts));
  const SavedPlan back = PlanFromJson(nlohmann::json::parse(saved), "plan.json");
  for (const auto& item : back.plan.items()) {
    if (item.step == "os.sysctl") {
      EXPECT_EQ(item.env.at("GPUCTL_HOSTS"), hosts) << item.node;
    }
    EXPECT_EQ(item.digest, plan.items()[item.id].digest);
  }
}

TEST_F(PlanViewTest, JsonRoundTripsItemsAndHeader) {
  PlanHeader header{"test",
                    "inv.yaml",
                    "aaaa",
                    "bbbb",
                    "2026-11-22T00:00:00Z",
                    {{"master1", "ubuntu-22.04"}, {"worker1", "rocky-9"}}};
  const auto doc = PlanToJson(plan, header, {});
  EXPECT_EQ(doc["nodes"][1]["os"], "rocky-9");
  EXPECT_EQ(doc["summary"]["to_change"], 1);
  EXPECT_EQ(doc["items"].size(), plan.items().size());
  const SavedPlan back = PlanFromJson(nlohmann::json::parse(doc.dump()), "plan.json");
  EXPECT_EQ(back.header.inventory_digest, "aaaa");
  EXPECT_EQ(back.header.catalog_digest, "bbbb");
  EXPECT_EQ(back.header.node_os, header.node_os);
  ASSERT_EQ(back.plan.items().size(), plan.items().size());
  for (std::size_t i = 0; i < plan.items().size(); ++i) {
    EXPECT_EQ(back.plan.items()[i].state, plan.items()[i].state);
    EXPECT_EQ(back.plan.items()[i].observed, plan.items()[i].observed);
    EXPECT_EQ(back.plan.items()[i].digest, plan.items()[i].digest);
  }
}

TEST_F(PlanViewTest, RejectsADocumentThatIsNotAPlan) {
  EXPECT_THROW(PlanFromJson(nlohmann::json{{"format", "other"}}, "x.json"), LoadError);
  auto doc = PlanToJson(plan, {}, {});
  doc["items"][0]["state"] = "maybe";
  try {
    PlanFromJson(doc, "x.json");
    FAIL() << "accepted an unknown state";
  } catch (const LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("x.json: error: item 0: unknown state"), std::string::npos)
        << e.what();
  }
}

TEST(PlanViewNotice, ASavedPlanSaysWhereAndHowToApplyExactlyIt) {
  EXPECT_EQ(SavedPlanNotice("/tmp/p.json"),
            "Saved the plan to /tmp/p.json; `gpuctl apply /tmp/p.json` applies exactly this.\n");
}

// 20 GPU nodes and a master: what each node would change.
class PlanViewFold : public ::testing::Test {
 protected:
  PlanViewFold() {
    std::vector<Node> nodes = {MakeNode("master1", Role::kMaster)};
    for (int i = 1; i <= 20; ++i) {
      nodes.push_back(MakeNode(fmt::format("gpu{:02}", i), Role::kWorker));
    }
    inventory = MakeInventory(nodes);
    const Catalog catalog = Catalog::FromSteps({MakeStep("os.time", {Role::kMaster, Role::kWorker}),
                                                MakeStep("os.hostname", {Role::kWorker})});
    plan = Plan::Build(inventory, catalog);
    for (int i = 1; i <= 20; ++i) {
      const std::string name = fmt::format("gpu{:02}", i);
      plan.Find(name, "os.time")->state = ItemState::kNeedsChange;
      plan.Find(name, "os.time")->observed = "chrony is not installed";
      plan.Find(name, "os.hostname")->state = ItemState::kNeedsChange;
      plan.Find(name, "os.hostname")->observed = "hostname is localhost, want " + name;
    }
    plan.Find("master1", "os.time")->state = ItemState::kSatisfied;
  }
  static std::size_t Count(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++count;
    }
    return count;
  }
  Inventory inventory;
  Plan plan;
};

TEST_F(PlanViewFold, TwentyIdenticalNodesPrintEachLineOnce) {
  const std::string text = RenderPlanText(plan, inventory, {}, {});
  EXPECT_EQ(text,
            "master1  198.18.0.17  ubuntu-22.04  [master]\n"
            "  = os.time                        ok\n"
            "gpu[01-20] (20 identical)  ubuntu-22.04  [worker]\n"
            "  ~ os.time                        will change: chrony is not installed\n"
            "  ~ os.hostname                    will change: hostname is localhost, want <node>\n"
            "\nPlan: 21 nodes: 40 to change, 1 ok\n");
}

TEST_F(PlanViewFold, ADifferingNodeIsShownApartAndTheOthersStayOneGroup) {
  // gpu07 already has chrony.
  plan.Find("gpu07", "os.time")->state = ItemState::kSatisfied;
  const std::string text = RenderPlanText(plan, inventory, {}, {});
  EXPECT_NE(text.find("gpu[01-06,08-20] (19 identical)  ubuntu-22.04  [worker]\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("want <node>"), std::string::npos) << text;
  // gpu07 stands alone, with its address and its own name in its lines.
  EXPECT_NE(text.find("gpu07  "), std::string::npos) << text;
  EXPECT_NE(text.find("want gpu07"), std::string::npos) << text;
  EXPECT_EQ(Count(text, "chrony is not installed"), 1U) << "once, not once per node: " << text;
  // With --hide-ok gpu07 still differs (it has one change less).
  TextOptions hide;
  hide.show_ok = false;
  const std::string hidden = RenderPlanText(plan, inventory, {}, hide);
  EXPECT_EQ(Count(hidden, "chrony is not installed"), 1U) << hidden;
  EXPECT_EQ(hidden.find("= os.time"), std::string::npos) << hidden;
}

TEST_F(PlanViewFold, OnlyProblemsListsTheNodesThatHaveSome) {
  for (auto& item : plan.items()) {
    item.state = ItemState::kApplied;
  }
  plan.Find("gpu05", "os.hostname")->state = ItemState::kFailed;
  plan.Find("gpu05", "os.hostname")->detail = "change exited 1: hostnamectl: access denied";
  plan.Find("gpu09", "os.hostname")->state = ItemState::kFailed;
  plan.Find("gpu09", "os.hostname")->detail = "change exited 1: hostnamectl: access denied";
  TextOptions problems;
  problems.problems_only = true;
  problems.summary = false;
  EXPECT_EQ(RenderPlanText(plan, inventory, {}, problems),
            "gpu[05,09] (2 identical)  ubuntu-22.04  [worker]\n"
            "  ! os.hostname                    failed: change exited 1: hostnamectl: access "
            "denied\n");
}

TEST_F(PlanViewFold, LinesAreCutToTheWidth) {
  TextOptions narrow;
  narrow.width = 40;
  const std::string text = RenderPlanText(plan, inventory, {}, narrow);
  EXPECT_NE(text.find("  ~ os.time                        will\xe2\x80\xa6\n"), std::string::npos)
      << text;
  EXPECT_NE(RenderPlanText(plan, inventory, {}, {}).find("will change: chrony is not installed"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuctl
