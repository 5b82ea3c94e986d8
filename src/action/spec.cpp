#include "gpuctl/action/spec.h"

#include <chrono>
#include <filesystem>
#include <ostream>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "gpuctl/model/yaml_source.h"
#include "gpuctl/util/digest.h"
#include "gpuctl/util/input_file.h"

namespace gpuctl {

std::optional<Spec> LoadSpec(const std::string& inventory_path, const SpecOptions& options,
                             std::ostream& err) {
  Diagnostics diagnostics;
  // Read once: the digest a saved plan records is of the bytes validated.
  const auto text = yaml::ReadFile(inventory_path, kMaxInventoryBytes, diagnostics);
  auto inventory =
      text ? ParseInventory(*text, inventory_path, diagnostics) : std::optional<Inventory>();
  auto catalog = Catalog::Load(options.playbooks.empty() ? DefaultPlaybookDir() : options.playbooks,
                               diagnostics);
  err << diagnostics.Format();
  if (!inventory || !catalog) {
    err << fmt::format("gpuctl: {} error(s); nothing was sent to any node\n",
                       diagnostics.ErrorCount());
    return std::nullopt;
  }
  if (!options.only.empty()) {
    std::string error;
    Catalog selected = catalog->Select(options.only, error);
    if (!error.empty()) {
      err << "gpuctl: " << error << "; nothing was sent to any node\n";
      return std::nullopt;
    }
    catalog = std::move(selected);
  }
  return Spec{std::move(*inventory), std::move(*catalog), Digest(*text)};
}

PlanHeader HeaderFor(const Spec& spec) {
  PlanHeader h;
  h.cluster = spec.inventory.cluster;
  // Absolute, so `gpuctl apply plan.json` works from any directory.
  h.inventory_path = std::filesystem::absolute(spec.inventory.path).string();
  h.inventory_digest = spec.inventory_digest;
  h.catalog_digest = spec.catalog.Digest();
  for (const auto& node : spec.inventory.nodes) {
    if (!node.os.IsAuto()) {  // an auto node the run could not identify records nothing
      h.node_os[node.name] = node.os.Name();
    }
  }
  h.created =
      fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                  std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  return h;
}

}  // namespace gpuctl
