// Small in-code inventories and catalogs for unit tests of the plan and the
// phases, so those tests don't depend on the YAML loaders.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"

namespace gpuctl::testing {

// A real /etc/os-release from tests/fixtures/os-release/ ("ubuntu-22.04",
// "rocky-9", ...), for a fake node to answer the identify phase with.
inline std::string OsReleaseFixture(const std::string& name) {
  std::ifstream in(std::string(GPUCTL_FIXTURES_DIR) + "/os-release/" + name, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline Node MakeNode(const std::string& name, Role role, OsFamily family = OsFamily::kDebian) {
  Node n;
  n.name = name;
  n.address = "198.18.0." + std::to_string(10 + name.size());
  n.roles = {role};
  n.os = family == OsFamily::kDebian ? OsRelease{"ubuntu", "22.04", family}
                                     : OsRelease{"rocky", "9", family};
  return n;
}

inline Inventory MakeInventory(std::vector<Node> nodes) {
  Inventory inv;
  inv.cluster = "test";
  inv.nodes = std::move(nodes);
  return inv;
}

inline Step MakeStep(const std::string& id, std::set<Role> roles,
                     std::vector<StepDependency> depends = {}) {
  Step s;
  s.id = id;
  s.description = id;
  s.roles = std::move(roles);
  s.depends = std::move(depends);
  s.probe = "probe " + id;
  s.verify = "verify " + id;
  s.change[OsFamily::kDebian] = "apt change " + id;
  s.change[OsFamily::kRhel] = "dnf change " + id;
  return s;
}

inline StepDependency SameNode(const std::string& step) { return {step, std::nullopt, {}}; }
inline StepDependency OnRole(const std::string& step, Role role) { return {step, role, {}}; }

}  // namespace gpuctl::testing
