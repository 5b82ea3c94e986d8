// The inventory's `fabric:` block: which nodes run the InfiniBand subnet
// manager on a fabric whose switches do not (docs/inventory.md#fabric).
//
// A name here becomes part of a systemd unit's environment file and of the
// messages probes print, so it is checked as a host name where it is
// written, and then as a node that stays and has IB ports.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "inventory_internal.h"

namespace gpuctl::detail {

namespace {

void ReadNodeName(yaml::Source& source, yaml::MapReader& m, const char* key, std::string& out,
                  SourceLocation& where) {
  auto v = m.String(key);
  if (!v) {
    return;
  }
  where = v->where;
  if (const std::string problem = HostNameProblem(v->text); !problem.empty()) {
    source.Error(v->where, fmt::format("invalid fabric.{} '{}': {}", key, v->text, problem));
    return;
  }
  out = v->text;
}

// One subnet-manager node: it must be a node of the inventory, stay, and
// have IB ports for OpenSM to bind to.
void CheckSubnetManagerNode(yaml::Source& source, const Inventory& inv, const std::string& name,
                            const char* key, const SourceLocation& where) {
  const Node* node = inv.Find(name);
  if (node == nullptr) {
    std::vector<std::string> names;
    for (const Node& n : inv.nodes) {
      names.push_back(n.name);
    }
    source.Error(where, fmt::format("fabric.{} '{}' is not a node{}", key, name,
                                    yaml::DidYouMean(name, names)));
  } else if (node->absent) {
    source.Error(where, fmt::format("fabric.{} '{}' has state absent: name a node that stays, "
                                    "or the fabric loses its subnet manager when it leaves",
                                    key, name));
  } else if (!node->Has(Role::kMaster) && !node->Has(Role::kWorker)) {
    source.Error(where, fmt::format("fabric.{} '{}' is neither master nor worker: gpuctl "
                                    "installs OFED, which OpenSM runs on, only there",
                                    key, name));
  } else if (node->hardware.ib.empty()) {
    source.Error(where, fmt::format("fabric.{} '{}' has no IB ports (hardware.ib): OpenSM "
                                    "runs on a port of the fabric it manages",
                                    key, name));
  }
}

}  // namespace

void ReadFabric(yaml::Source& source, yaml::MapReader& m, Inventory& inventory,
                InventoryMarks& marks) {
  ReadNodeName(source, m, "subnet_manager", inventory.fabric.subnet_manager, marks.subnet_manager);
  ReadNodeName(source, m, "subnet_manager_standby", inventory.fabric.subnet_manager_standby,
               marks.subnet_manager_standby);
}

void CheckFabric(yaml::Source& source, const Inventory& inventory, const InventoryMarks& marks) {
  const Fabric& fabric = inventory.fabric;
  if (!fabric.subnet_manager.empty()) {
    CheckSubnetManagerNode(source, inventory, fabric.subnet_manager, "subnet_manager",
                           marks.subnet_manager);
  }
  if (fabric.subnet_manager_standby.empty()) {
    return;
  }
  if (fabric.subnet_manager.empty()) {
    source.Error(marks.subnet_manager_standby,
                 "fabric.subnet_manager_standby needs fabric.subnet_manager: a standby takes "
                 "over from a subnet manager, it does not replace one");
  } else if (fabric.subnet_manager_standby == fabric.subnet_manager) {
    source.Error(marks.subnet_manager_standby,
                 fmt::format("fabric.subnet_manager_standby '{}' is the subnet manager itself: "
                             "name another node, so the fabric outlives either one",
                             fabric.subnet_manager));
    return;
  }
  CheckSubnetManagerNode(source, inventory, fabric.subnet_manager_standby, "subnet_manager_standby",
                         marks.subnet_manager_standby);
}

}  // namespace gpuctl::detail
