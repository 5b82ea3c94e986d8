// Rendered parameters are checked on the way out (src/model/params.cpp): a value
// that reached an Inventory without the loader's checks (a bug, or a caller
// building one by hand) and would break a line-oriented file is an internal
// error, never a silent extra /etc/hosts, /etc/exports, fstab or slurm.conf
// line.
#include <string>

#include <gtest/gtest.h>

#include "gpuctl/model/params.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::kMinimalInventory;
using testing::ParseText;

Inventory Loaded(const std::string& extra = "") {
  auto p = ParseText(std::string(kMinimalInventory) + extra);
  EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
  return *p.inventory;
}

constexpr const char* kNfsAndSlurm =
    "orchestrator: slurm\n"
    "slurm: {partitions: [{name: gpu, nodes: [w1]}]}\n"
    "nfs: {exports: [{path: /data, clients: 10.0.0.0/8}], "
    "mounts: [{export: /data, path: /mnt/data}]}\n";

TEST(ParamsRender, ValidInventoryRendersEveryRecordOnItsOwnLine) {
  const Inventory inv = Loaded(kNfsAndSlurm);
  const auto values = ParameterValues(inv, inv.nodes[1]);
  EXPECT_EQ(values.at("nfs_exports"), "/data 10.0.0.0/8");
  EXPECT_EQ(values.at("nfs_mounts"), "198.18.0.10:/data /mnt/data rw,hard,nfsvers=4.1");
  EXPECT_EQ(values.at("slurm_partitions"), "gpu w1 NO INFINITE -");
  EXPECT_EQ(values.at("hosts"), "198.18.0.10 m1\n198.18.0.11 w1");
}

TEST(ParamsRender, ALineBreakInALineOrientedValueIsAnInternalError) {
  const Inventory good = Loaded(kNfsAndSlurm);
  struct Case {
    const char* name;
    void (*spoil)(Inventory&);
    const char* parameter;
  };
  const Case cases[] = {
      {"exports clients", [](Inventory& i) { i.nfs->exports[0].clients = "10.0.0.0/8\n/ *"; },
       "nfs_exports"},
      {"export path", [](Inventory& i) { i.nfs->exports[0].path = "/data /"; }, "nfs_exports"},
      {"mount point", [](Inventory& i) { i.nfs->mounts[0].mount_point = "/mnt\n/dev/sda1 /boot"; },
       "nfs_mounts"},
      {"mount options", [](Inventory& i) { i.nfs->mounts[0].options = "rw\tx"; }, "nfs_mounts"},
      {"partition name", [](Inventory& i) { i.slurm->partitions[0].name = "gpu\nPartitionName=x"; },
       "slurm_partitions"},
      {"node name", [](Inventory& i) { i.nodes[0].name = "m1\n6.6.6.6 evil"; }, "hosts"},
      {"ib address", [](Inventory& i) { i.nodes[1].ib_address = "10.0.0.1\r"; }, "hosts"},
      {"cluster", [](Inventory& i) { i.cluster = "lab\nx"; }, "cluster"},
      {"gpu model",
       [](Inventory& i) {
         i.nodes[1].hardware.gpus = GpuExpectation{"A100\nx", 8, std::nullopt, std::nullopt};
       },
       "gpu_model"},
      {"NUL in a version", [](Inventory& i) { i.versions.cudnn = std::string("9.1\0x", 5); },
       "cudnn_version"},
  };
  for (const Case& c : cases) {
    Inventory inv = good;
    c.spoil(inv);
    try {
      (void)ParameterValues(inv, inv.nodes[1]);
      ADD_FAILURE() << c.name << ": rendered without complaint";
    } catch (const RenderError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("internal error: parameter ") + c.parameter),
                std::string::npos)
          << c.name << ": " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << c.name << ": " << what;
    }
  }
}

TEST(ParamsRender, StepEnvironmentRefusesTooBeforeAnyScriptIsBuilt) {
  Inventory inv = Loaded(kNfsAndSlurm);
  inv.nfs->exports[0].clients = "10.0.0.0/8\n/ *(rw,no_root_squash)";
  EXPECT_THROW(StepEnvironment({"nfs_exports"}, inv, inv.nodes[0]), RenderError);
}

}  // namespace
}  // namespace gpuctl
