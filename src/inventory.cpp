// Placeholder until the inventory loader lands (issue 3); replaced wholesale.
#include "gpuctl/inventory.h"

namespace gpuctl {
std::optional<Inventory> LoadInventory(const std::string& path, Diagnostics& diagnostics) {
  diagnostics.Error({path, 0, 0}, "inventory loading is not implemented yet");
  return std::nullopt;
}
}  // namespace gpuctl
