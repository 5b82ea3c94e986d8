// What `gpuctl check` prints, from a probed plan built by hand: the report's
// figures, its text and its JSON.
#include "gpuctl/view/check_view.h"
#include "gpuctl/util/utf8.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cluster_builder.h"

namespace gpuctl {
namespace {

using testing::MakeInventory;
using testing::MakeNode;
using testing::MakeStep;

class CheckViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    inventory =
        MakeInventory({MakeNode("master1", Role::kMaster), MakeNode("worker1", Role::kWorker),
                       MakeNode("worker2", Role::kWorker)});
    Step driver = MakeStep("gpu.driver", {Role::kWorker});
    driver.description = "NVIDIA driver";
    Step nccl = MakeStep("validate.nccl", {Role::kWorker});
    nccl.deep = true;
    catalog =
        Catalog::FromSteps({MakeStep("os.sysctl", {Role::kMaster, Role::kWorker}), driver, nccl});
  }
  // Every item of the scope's plan holds until a test says otherwise.
  void Probe(PlanScope scope) {
    plan = Plan::Build(inventory, catalog, scope);
    for (auto& item : plan.items()) {
      item.state = ItemState::kSatisfied;
    }
  }
  PlanItem& Item(const std::string& node, const std::string& step) {
    PlanItem* item = plan.Find(node, step);
    EXPECT_NE(item, nullptr) << node << " " << step;
    return *item;
  }
  Inventory inventory;
  Catalog catalog;
  Plan plan;
};

TEST_F(CheckViewTest, AMatchingClusterPrintsOnlyTheSummary) {
  Probe(PlanScope::kConverge);
  const CheckReport report = MakeCheckReport(plan, catalog, inventory, {}, false);
  EXPECT_TRUE(report.Matches());
  EXPECT_EQ(RenderCheckText(report),
            "\nCheck: 3 nodes, 5 of 5 checks pass, 0 mismatches, 0 unreachable\n");
  EXPECT_EQ(CheckToJson(report), nlohmann::json::parse(R"({
    "format": "gpuctl.check/v1", "cluster": "test", "matches": true, "checked": 5, "ok": 5,
    "mismatches": [], "unreachable": {}})"))
      << "no \"validations\" without --deep";
}

TEST_F(CheckViewTest, AMismatchSaysTheProbesFirstLineElseTheDetailElseTheStep) {
  Probe(PlanScope::kConverge);
  Item("worker1", "os.sysctl").state = ItemState::kNeedsChange;
  Item("worker1", "os.sysctl").observed = "ip_forward=0 (want 1)\nsecond line";
  Item("master1", "os.sysctl").state = ItemState::kProbeFailed;
  Item("master1", "os.sysctl").detail = "probe exited 2";
  Item("worker2", "gpu.driver").state = ItemState::kNeedsChange;
  const CheckReport report = MakeCheckReport(plan, catalog, inventory, {}, false);
  EXPECT_FALSE(report.Matches());
  ASSERT_EQ(report.mismatches.size(), 3U);
  const std::string text = RenderCheckText(report);
  EXPECT_NE(text.find("worker1: ip_forward=0 (want 1) (os.sysctl)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("master1: probe exited 2 (os.sysctl)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("worker2: not in place: NVIDIA driver (gpu.driver)\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("second line"), std::string::npos) << text;
  EXPECT_NE(text.find("\nCheck: 3 nodes, 2 of 5 checks pass, 3 mismatches, 0 unreachable\n"),
            std::string::npos)
      << text;
  const auto json = CheckToJson(report);
  EXPECT_FALSE(json["matches"].get<bool>());
  EXPECT_EQ(json["ok"], 2);
  bool found = false;
  for (const auto& m : json["mismatches"]) {
    if (m["node"] == "master1") {
      found = true;
      EXPECT_EQ(m, nlohmann::json::parse(R"({"node": "master1", "step": "os.sysctl",
                 "state": ")" + std::string(ToString(ItemState::kProbeFailed)) +
                                         R"(", "message": "probe exited 2"})"));
    }
  }
  EXPECT_TRUE(found) << json.dump(2);
}

TEST_F(CheckViewTest, OneMismatchIsSingular) {
  Probe(PlanScope::kConverge);
  Item("worker2", "gpu.driver").state = ItemState::kNeedsChange;
  EXPECT_NE(RenderCheckText(MakeCheckReport(plan, catalog, inventory, {}, false))
                .find(", 1 mismatch, 0 unreachable\n"),
            std::string::npos);
}

TEST_F(CheckViewTest, AnUnreachableNodeIsSaidOnceAndItsItemsAreNotMismatches) {
  Probe(PlanScope::kDeepCheck);
  for (const std::size_t id : plan.ItemsOf("worker2")) {
    plan.items()[id].state = ItemState::kUnreachable;
  }
  const std::map<std::string, std::string> errors = {{"worker2", "connection refused"}};
  const CheckReport report = MakeCheckReport(plan, catalog, inventory, errors, true);
  EXPECT_TRUE(report.mismatches.empty());
  ASSERT_EQ(report.validations.size(), 1U) << "only the reachable worker's";
  EXPECT_EQ(report.validations[0].node, "worker1");
  const std::string text = RenderCheckText(report);
  EXPECT_EQ(text.rfind("worker2: unreachable: connection refused\n", 0), 0U) << text;
  EXPECT_EQ(text.find("worker2", 1), std::string::npos) << text;
  EXPECT_NE(text.find("\nCheck: 3 nodes, 4 of 7 checks pass, 0 mismatches, 1 unreachable\n"),
            std::string::npos)
      << text;
  const auto json = CheckToJson(report);
  EXPECT_FALSE(json["matches"].get<bool>());
  EXPECT_EQ(json["unreachable"], nlohmann::json::parse(R"({"worker2": "connection refused"})"));
}

TEST_F(CheckViewTest, DeepValidationsReportTheirFiguresPassOrFail) {
  Probe(PlanScope::kDeepCheck);
  Item("worker1", "validate.nccl").observed = "busbw 180 GB/s";
  Item("worker2", "validate.nccl").state = ItemState::kNeedsAttention;
  Item("worker2", "validate.nccl").observed = "busbw 12 GB/s (want >= 100)";
  const CheckReport report = MakeCheckReport(plan, catalog, inventory, {}, true);
  const std::string text = RenderCheckText(report);
  EXPECT_NE(text.find("worker2: busbw 12 GB/s (want >= 100) (validate.nccl)\n"
                      "\nDeep validation:\n"
                      "  pass worker1: busbw 180 GB/s (validate.nccl)\n"
                      "  FAIL worker2: busbw 12 GB/s (want >= 100) (validate.nccl)\n"
                      "\nCheck: 3 nodes, 6 of 7 checks pass, 1 mismatch, 0 unreachable\n"),
            std::string::npos)
      << text;
  const auto json = CheckToJson(report);
  ASSERT_TRUE(json.contains("validations")) << json.dump(2);
  ASSERT_EQ(json["validations"].size(), 2U);
  const nlohmann::json failed = {{"node", "worker2"},
                                 {"step", "validate.nccl"},
                                 {"passed", false},
                                 {"figures", "busbw 12 GB/s (want >= 100)"}};
  EXPECT_EQ(json["validations"][1], failed);
}

TEST_F(CheckViewTest, JsonShowsBytesThatAreNotUtf8InsteadOfThrowing) {
  Probe(PlanScope::kConverge);
  Item("worker1", "os.sysctl").state = ItemState::kNeedsChange;
  Item("worker1", "os.sysctl").observed = "locale says caf\xe9";
  const CheckReport report =
      MakeCheckReport(plan, catalog, inventory, {{"worker2", "banner \xff"}}, false);
  std::string dumped;
  ASSERT_NO_THROW(dumped = CheckToJson(report).dump());
  EXPECT_EQ(nlohmann::json::parse(dumped)["mismatches"][0]["message"],
            ValidUtf8("locale says caf\xe9"));
  EXPECT_EQ(nlohmann::json::parse(dumped)["unreachable"]["worker2"], ValidUtf8("banner \xff"));
}

TEST_F(CheckViewTest, PassingDeepValidationsCanBeHidden) {
  Probe(PlanScope::kDeepCheck);
  Item("worker2", "validate.nccl").state = ItemState::kNeedsAttention;
  Item("worker2", "validate.nccl").observed = "busbw 12 GB/s (want >= 100)";
  CheckTextOptions options;
  options.hide_ok = true;
  const std::string text =
      RenderCheckText(MakeCheckReport(plan, catalog, inventory, {}, true), options);
  EXPECT_EQ(text.find("pass "), std::string::npos) << text;
  EXPECT_NE(text.find("  FAIL worker2: busbw 12 GB/s (want >= 100) (validate.nccl)\n"),
            std::string::npos)
      << text;
}

// 20 workers: the same mismatch on all but one, and two unreachable alike.
TEST(CheckViewFold, IdenticalNodesAreSaidOnceUnderTheirNames) {
  std::vector<Node> nodes = {MakeNode("master1", Role::kMaster)};
  for (int i = 1; i <= 20; ++i) {
    nodes.push_back(MakeNode(fmt::format("gpu{:02}", i), Role::kWorker));
  }
  const Inventory inventory = MakeInventory(nodes);
  const Catalog catalog = Catalog::FromSteps({MakeStep("os.time", {Role::kMaster, Role::kWorker}),
                                              MakeStep("os.hostname", {Role::kWorker})});
  Plan plan = Plan::Build(inventory, catalog);
  for (auto& item : plan.items()) {
    item.state = ItemState::kSatisfied;
  }
  for (int i = 1; i <= 18; ++i) {
    const std::string name = fmt::format("gpu{:02}", i);
    plan.Find(name, "os.time")->state = ItemState::kNeedsChange;
    plan.Find(name, "os.time")->observed = "chrony is not installed";
    plan.Find(name, "os.hostname")->state = ItemState::kNeedsChange;
    plan.Find(name, "os.hostname")->observed = "hostname is localhost, want " + name;
  }
  plan.Find("gpu07", "os.time")->observed = "chrony 3.5 is too old";
  const std::map<std::string, std::string> errors = {{"gpu19", "connection refused"},
                                                     {"gpu20", "connection refused"}};
  const std::string text =
      RenderCheckText(MakeCheckReport(plan, catalog, inventory, errors, false));
  EXPECT_EQ(text,
            "gpu[19-20] (2 identical):\n"
            "  unreachable: connection refused\n"
            "gpu[01-06,08-18] (17 identical):\n"
            "  chrony is not installed (os.time)\n"
            "  hostname is localhost, want <node> (os.hostname)\n"
            "gpu07: chrony 3.5 is too old (os.time)\n"
            "gpu07: hostname is localhost, want gpu07 (os.hostname)\n"
            "\nCheck: 21 nodes, 5 of 41 checks pass, 36 mismatches, 2 unreachable\n");
  // Cut to a terminal's width, the summary too.
  CheckTextOptions narrow;
  narrow.width = 30;
  const std::string cut =
      RenderCheckText(MakeCheckReport(plan, catalog, inventory, errors, false), narrow);
  EXPECT_NE(cut.find("\nCheck: 21 nodes, 5 of 41 chec\xe2\x80\xa6\n"), std::string::npos) << cut;
}

}  // namespace
}  // namespace gpuctl
