// hardware.gpus.nvswitch: read as true, false or unset; an 8-GPU SXM board
// that leaves it unset gets one warning per place it is written; the
// nvswitch condition and parameter follow it.
#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/params.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::kMinimalInventory;
using testing::ParseText;

// kMinimalInventory with `gpus` (a flow map) as w1's hardware.gpus.
std::string WithGpus(const std::string& gpus) {
  return std::string(kMinimalInventory) + "    hardware:\n      gpus: " + gpus + "\n";
}

int Warnings(const Diagnostics& diagnostics) {
  int n = 0;
  for (const auto& d : diagnostics.All()) {
    n += d.severity == Severity::kWarning ? 1 : 0;
  }
  return n;
}

TEST(InventoryNvswitch, ReadsTrueFalseAndUnset) {
  for (const auto& [value, want] : std::vector<std::pair<std::string, std::optional<bool>>>{
           {", nvswitch: true", true}, {", nvswitch: false", false}, {"", std::nullopt}}) {
    auto p = ParseText(WithGpus("{model: \"NVIDIA H100 80GB HBM3\", count: 4" + value + "}"));
    ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
    const Node& w1 = p.inventory->nodes[1];
    EXPECT_EQ(w1.hardware.gpus->nvswitch, want) << value;
    EXPECT_EQ(w1.OnNvswitch(), want.value_or(false)) << value;
  }
}

TEST(InventoryNvswitch, RefusesANonBoolean) {
  auto p = ParseText(WithGpus("{model: \"NVIDIA H100 80GB HBM3\", count: 8, nvswitch: maybe}"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 12, 66, "expected true or false, got 'maybe'"))
      << p.diagnostics.Format();
}

TEST(InventoryNvswitch, WarnsForAnEightGpuSxmBoardThatDoesNotSay) {
  auto p = ParseText(WithGpus("{model: \"NVIDIA A100-SXM4-80GB\", count: 8}"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 12, 13,
                            "node w1: 8x NVIDIA A100-SXM4-80GB is an HGX/DGX board, usually on "
                            "NVSwitch; set hardware.gpus.nvswitch",
                            Severity::kWarning));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 12, 13, "error 802", Severity::kWarning));
}

TEST(InventoryNvswitch, NoWarningWhenSaidOrNotAnSxmBoard) {
  for (const std::string gpus : {
           "{model: \"NVIDIA H100 80GB HBM3\", count: 8, nvswitch: true}",
           "{model: \"NVIDIA H100 80GB HBM3\", count: 8, nvswitch: false}",
           "{model: \"NVIDIA H100 80GB HBM3\", count: 4}",  // HGX 4-GPU: direct NVLink
           "{model: \"NVIDIA H100 PCIe\", count: 8}",
           "{model: \"NVIDIA H100 NVL\", count: 8}",
           "{model: \"NVIDIA L40S\", count: 8}",
           "{model: \"NVIDIA A100-PCIE-40GB\", count: 8}",
       }) {
    auto p = ParseText(WithGpus(gpus));
    ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
    EXPECT_EQ(Warnings(p.diagnostics), 0) << gpus << "\n" << p.diagnostics.Format();
  }
  for (const std::string model :
       {"NVIDIA H200", "NVIDIA B200", "NVIDIA H800", "Tesla V100-SXM2-32GB"}) {
    auto p = ParseText(WithGpus("{model: \"" + model + "\", count: 8}"));
    ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
    EXPECT_EQ(Warnings(p.diagnostics), 1) << model << "\n" << p.diagnostics.Format();
  }
}

TEST(InventoryNvswitch, OneWarningForARangeOrTheDefaultsItTakes) {
  auto p = ParseText(R"(cluster: lab
node_defaults:
  os: ubuntu-22.04
  hardware:
    gpus: {model: "NVIDIA H100 80GB HBM3", count: 8}
nodes:
  - name: m1
    address: 198.18.0.10
    roles: [master]
    hardware: {}
  - name: gpu[01-04]
    address: 198.18.0.[11-14]
    roles: [worker]
)");
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_EQ(Warnings(p.diagnostics), 1) << p.diagnostics.Format();
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 5, 11, "4 nodes (gpu01 .. gpu04): 8x NVIDIA H100",
                            Severity::kWarning));
}

TEST(InventoryNvswitch, ConditionAndParameterFollowTheField) {
  auto p = ParseText(WithGpus("{model: \"NVIDIA H100 80GB HBM3\", count: 8, nvswitch: true}"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  Step step;
  step.roles = {Role::kWorker, Role::kMaster};
  step.when = {StepCondition::kNvswitch};
  EXPECT_TRUE(step.AppliesTo(inv.nodes[1], inv));
  EXPECT_FALSE(step.AppliesTo(inv.nodes[0], inv)) << "no GPUs, no NVSwitch";
  EXPECT_EQ(ParameterValues(inv, inv.nodes[1]).at("nvswitch"), "true");
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("nvswitch"), "");
  auto off = ParseText(WithGpus("{model: \"NVIDIA H100 80GB HBM3\", count: 8, nvswitch: false}"));
  ASSERT_TRUE(off.inventory);
  EXPECT_FALSE(step.AppliesTo(off.inventory->nodes[1], *off.inventory));
  EXPECT_EQ(ParameterValues(*off.inventory, off.inventory->nodes[1]).at("nvswitch"), "false");
}

}  // namespace
}  // namespace gpuctl
