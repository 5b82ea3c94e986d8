// Placeholder until the catalog loader lands (issue 3); replaced wholesale.
#include "gpuctl/catalog.h"

namespace gpuctl {

bool Step::AppliesTo(const Node& node, const Inventory& /*inventory*/) const {
  bool role = false;
  for (Role r : roles) {
    role = role || node.Has(r);
  }
  return role && (families.empty() || families.count(node.os.family) > 0);
}

const std::string* Step::ChangeFor(OsFamily family) const {
  auto it = change.find(family);
  return it == change.end() ? nullptr : &it->second;
}

const Step* Catalog::Find(const std::string& id) const {
  for (const auto& s : steps_) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

}  // namespace gpuctl
