// hardware.gpus.mig: read per GPU, checked against the model's profiles and
// placed (errors at the value's line and column); the mig condition, the
// mig_layout and mig_strategy parameters and the MIG resources in
// gpu_counts follow it.
#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/params.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::ParseText;

// A Kubernetes cluster whose worker w1 has `gpus` (block YAML, indented for
// hardware.gpus) and whose w2 has two whole H100s.
std::string Cluster(const std::string& gpus) {
  return "cluster: lab\norchestrator: kubernetes\nnodes:\n"
         "  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: w1\n    address: 198.18.0.11\n    os: ubuntu-22.04\n    roles: [worker]\n"
         "    hardware:\n      gpus:\n" +
         gpus +
         "  - name: w2\n    address: 198.18.0.12\n    os: rocky-9\n    roles: [worker]\n"
         "    hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 2}}\n";
}

constexpr const char* kMixedLayout = R"(        model: NVIDIA A100-SXM4-80GB
        count: 4
        mig:
          - instances: {1g.10gb: 7}
          - gpus: 2-3
            instances: {2g.20gb: 1, 1g.10gb: 2, 3g.40gb: 1}
          - gpus: "1"
            instances: {}
)";

TEST(InventoryMig, LaterEntriesReplaceEarlierOnesPerGpu) {
  auto p = ParseText(Cluster(kMixedLayout));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Node& w1 = p.inventory->nodes[1];
  ASSERT_TRUE(w1.SetsMig());
  EXPECT_TRUE(w1.RunsMig());
  const auto& mig = *w1.hardware.gpus->mig;
  ASSERT_EQ(mig.size(), 4U);
  EXPECT_EQ(mig[0].size(), 7U);
  EXPECT_TRUE(mig[1].empty());
  ASSERT_EQ(mig[2].size(), 4U);
  EXPECT_EQ(mig[2][0].profile, "3g.40gb");
  EXPECT_EQ(mig[2][0].start, 4);
  EXPECT_FALSE(p.inventory->nodes[2].SetsMig());
}

TEST(InventoryMig, LayoutAndStrategyParameters) {
  auto p = ParseText(Cluster(kMixedLayout));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  auto w1 = ParameterValues(inv, inv.nodes[1]);
  EXPECT_EQ(w1.at("mig_layout"),
            "0 1g.10gb:0,1g.10gb:1,1g.10gb:2,1g.10gb:3,1g.10gb:4,1g.10gb:5,1g.10gb:6\n"
            "1 off\n"
            "2 3g.40gb:4,2g.20gb:0,1g.10gb:2,1g.10gb:3\n"
            "3 3g.40gb:4,2g.20gb:0,1g.10gb:2,1g.10gb:3");
  EXPECT_EQ(ParameterValues(inv, inv.nodes[2]).at("mig_layout"), "");
  // GPU 1 runs whole and there are three profiles: mixed, each counted.
  EXPECT_EQ(w1.at("mig_strategy"), "mixed");
  EXPECT_EQ(w1.at("gpu_counts"),
            "w1 1 mig-1g.10gb=11 mig-2g.20gb=2 mig-3g.40gb=2\n"
            "w2 2");
  EXPECT_TRUE(ConditionHolds(StepCondition::kMig, inv.nodes[1], inv));
  EXPECT_FALSE(ConditionHolds(StepCondition::kMig, inv.nodes[2], inv));
}

TEST(InventoryMig, OneProfileOnEveryGpuIsTheSingleStrategy) {
  auto p =
      ParseText(Cluster("        model: NVIDIA H100 80GB HBM3\n        count: 2\n"
                        "        mig: [{instances: {1g.10gb: 7}}]\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  auto values = ParameterValues(*p.inventory, p.inventory->nodes[1]);
  EXPECT_EQ(values.at("mig_strategy"), "single");
  EXPECT_EQ(values.at("gpu_counts"), "w1 14\nw2 2");
}

TEST(InventoryMig, AnEmptyLayoutTurnsMigOff) {
  auto p =
      ParseText(Cluster("        model: NVIDIA H100 80GB HBM3\n        count: 2\n"
                        "        mig: []\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  EXPECT_TRUE(inv.nodes[1].SetsMig());
  EXPECT_FALSE(inv.nodes[1].RunsMig());
  auto values = ParameterValues(inv, inv.nodes[1]);
  EXPECT_EQ(values.at("mig_layout"), "0 off\n1 off");
  EXPECT_EQ(values.at("mig_strategy"), "");
  EXPECT_EQ(values.at("gpu_counts"), "w1 2\nw2 2");
}

// w1 with two GPUs of `model` and `mig` as its hardware.gpus.mig (line 13).
testing::Parsed WithMig(const std::string& mig,
                        const std::string& model = "NVIDIA H100 80GB HBM3") {
  return ParseText(
      Cluster("        model: " + model + "\n        count: 2\n        mig: " + mig + "\n"));
}

TEST(InventoryMig, ErrorsPointAtTheValue) {
  struct Case {
    std::string mig, model;
    int column;
    std::string says;
  };
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  for (const Case& c : std::vector<Case>{
           {"[{instances: {1g.5gb: 7}}]", h100, 28,
            "unknown MIG profile '1g.5gb' (this model has: 1g.10gb, 1g.10gb+me"},
           {"[{gpus: 1, instances: {3g.40gb: 2, 2g.20gb: 1}}]", h100, 36,
            "GPU 1: these MIG instances do not fit on one NVIDIA H100 80GB HBM3: they take 8 "
            "compute slices of the GPU's 7"},
           {"[{gpus: 1-2, instances: {7g.80gb: 1}}]", h100, 22,
            "GPU 2 is not on this node (hardware.gpus.count is 2: GPUs 0-1)"},
           {"[{instances: {1g.10gb: 1}}]", "NVIDIA L40S", 14,
            "gpuctl knows no MIG profiles for 'NVIDIA L40S'"},
           {"[{instances: {1g.10gb: 0}}]", h100, 37, "0 is out of range: expected 1 to 7"},
       }) {
    auto p = WithMig(c.mig, c.model);
    EXPECT_TRUE(HasDiagnostic(p.diagnostics, 13, c.column, c.says)) << p.diagnostics.Format();
  }
}

// On Slurm every GPU record of a MIG node is typed: each MIG profile by its
// name, the node's whole GPUs by the model's (Slurm's NVML spelling); a node
// without MIG keeps its untyped count.
TEST(InventoryMig, SlurmCountsEachProfileAndTypesTheWholeGpusBeside) {
  std::string text = Cluster(kMixedLayout);
  text.replace(text.find("kubernetes"), 10, "slurm");
  auto p = ParseText(text);
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  EXPECT_EQ(ParameterValues(inv, inv.nodes[0]).at("slurm_nodes"),
            "w1 198.18.0.11 gpu:a100-sxm4-80gb:1,gpu:1g.10gb:11,gpu:2g.20gb:2,gpu:3g.40gb:2 1 "
            "a100-sxm4-80gb 1\n"
            "w2 198.18.0.12 gpu:2 2 - -");
}

}  // namespace
}  // namespace gpuctl
