// The playbook loader (Catalog::Parse, one file of playbooks/). A catalog it
// accepts must plan: Plan::Build over a small fixed inventory (both OS
// families, every role) throws std::invalid_argument for a parameter the
// loader should have refused, and would index past the steps on a dependency
// it should have caught.
#include "fuzz_check.h"
#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/run/prober.h"

namespace {

constexpr const char* kInventory = R"(cluster: fuzz
orchestrator: slurm
network: {subnet: 10.0.0.0/24}
nfs:
  exports: [{path: /data}]
  mounts: [{export: /data, path: /data}]
nodes:
  - {name: m1, address: 10.0.0.1, os: ubuntu-22.04, roles: [master]}
  - name: w1
    address: 10.0.0.2
    os: rocky-9
    roles: [worker]
    hardware:
      gpus: {model: "NVIDIA H100 80GB HBM3", count: 8}
      ib: [{device: mlx5_0, port: 1, rate: 400}]
  - {name: s1, address: 10.0.0.3, os: debian-12, roles: [storage]}
)";

const gpuctl::Inventory& FixedInventory() {
  static const gpuctl::Inventory kLoaded = [] {
    gpuctl::Diagnostics diagnostics;
    auto inventory = gpuctl::ParseInventory(kInventory, "fixed.yaml", diagnostics);
    if (!inventory) {
      std::fputs(diagnostics.Format().c_str(), stderr);
    }
    gpuctl::fuzz::Check(inventory.has_value(), "the fixed inventory loads");
    return *inventory;
  }();
  return kLoaded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuctl::fuzz::Check;
  const gpuctl::Inventory& inventory = FixedInventory();
  gpuctl::Diagnostics diagnostics;
  const auto catalog =
      gpuctl::Catalog::Parse(gpuctl::fuzz::Text(data, size), "fuzz.yaml", diagnostics);
  (void)diagnostics.Format();
  if (!catalog) {
    Check(diagnostics.HasErrors(), "a playbook that is refused has an error saying why");
    return 0;
  }
  (void)catalog->Digest();
  for (const auto& step : catalog->steps()) {
    Check(catalog->Find(step.id) == &step, "every step is found by its id");
    (void)gpuctl::VerdictScript(step);
    for (const auto& node : inventory.nodes) {
      (void)step.AppliesTo(node, inventory);
    }
  }
  if (!catalog->steps().empty()) {
    std::string error;
    const auto selected = catalog->Select({catalog->steps().front().id}, error);
    Check(error.empty() && !selected.steps().empty(), "a step's own id selects it");
  }
  for (const auto scope : {gpuctl::PlanScope::kConverge, gpuctl::PlanScope::kDeepCheck}) {
    const auto plan = gpuctl::Plan::Build(inventory, *catalog, scope);
    for (const auto& item : plan.items()) {
      for (const std::size_t dep : item.after) {
        Check(dep < plan.items().size() && dep != item.id, "plan edges name other items");
      }
    }
  }
  return 0;
}
