// The inventory loader `gpuctl validate`, `plan` and `apply` run on an
// admin's YAML (LoadInventory is this plus reading the file). Beyond not
// crashing, a loaded inventory keeps two promises the rest of gpuctl relies
// on: it has a master, and every value it holds renders into the step
// parameters without a RenderError (params.h: the loader refuses by kind
// whatever would break a config file on a node).
#include "fuzz_check.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/params.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuctl::fuzz::Check;
  gpuctl::Diagnostics diagnostics;
  const auto inventory =
      gpuctl::ParseInventory(gpuctl::fuzz::Text(data, size), "fuzz.yaml", diagnostics);
  // What validate prints: every message, with its position.
  const std::string report = diagnostics.Format();
  if (!inventory) {
    Check(diagnostics.HasErrors(), "an inventory that is refused has an error saying why");
    return 0;
  }
  Check(inventory->Master() != nullptr, "a loaded inventory has a master");
  for (const auto& node : inventory->nodes) {
    Check(inventory->Find(node.name) != nullptr, "every node is found by its name");
    (void)gpuctl::ParameterValues(*inventory, node);  // throws RenderError on a loader gap
  }
  (void)inventory->NfsServer();
  return 0;
}
