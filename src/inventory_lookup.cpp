// Placeholder until the inventory loader lands (issue 3); replaced wholesale.
#include "gpuctl/inventory.h"

namespace gpuctl {

const Node* Inventory::Find(const std::string& name) const {
  for (const auto& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::vector<const Node*> Inventory::WithRole(Role role) const {
  std::vector<const Node*> out;
  for (const auto& n : nodes) {
    if (n.Has(role)) out.push_back(&n);
  }
  return out;
}

std::string ToString(OsFamily family) { return family == OsFamily::kDebian ? "debian" : "rhel"; }

}  // namespace gpuctl

namespace gpuctl {
std::string ToString(Role role) {
  switch (role) {
    case Role::kMaster:
      return "master";
    case Role::kWorker:
      return "worker";
    case Role::kStorage:
      return "storage";
  }
  return "?";
}
}  // namespace gpuctl
