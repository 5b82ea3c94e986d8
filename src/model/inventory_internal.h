// The inventory loader's two passes, split so each file reads in one sitting:
// inventory_read.cpp turns YAML into an Inventory checking each value alone;
// inventory_check.cpp checks what spans keys and fills derived defaults.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpuctl/model/inventory.h"
#include "gpuctl/model/value_kinds.h"  // the kinds each reader checks values against
#include "gpuctl/model/yaml_source.h"

namespace gpuctl::detail {

// Where values were written, for the cross-key checks' messages. Absent keys
// keep line 0.
struct InventoryMarks {
  bool has_nodes = false;
  SourceLocation nodes;
  SourceLocation orchestrator;
  SourceLocation driver_branch;
  SourceLocation cuda;
  SourceLocation cudnn;
  SourceLocation nfs_server;
  SourceLocation subnet_manager;          // fabric.subnet_manager's value
  SourceLocation subnet_manager_standby;  // fabric.subnet_manager_standby's value
  SourceLocation slurm;
  SourceLocation air_gapped;  // policy.air_gapped's value
  SourceLocation mirrors;     // the `mirrors` key
  struct NodeMarks {
    SourceLocation name;
    SourceLocation address;
    SourceLocation ib_address;
    SourceLocation gpus;   // the hardware.gpus block it takes (maybe node_defaults')
    SourceLocation state;  // its `state`, when written
  };
  std::vector<NodeMarks> nodes_at;               // parallel to Inventory::nodes
  std::vector<SourceLocation> exports_at;        // parallel to Nfs::exports
  std::vector<SourceLocation> mount_exports_at;  // each mount's `export` value
  std::vector<SourceLocation> partitions_at;     // parallel to Slurm::partitions
  // Parallel to each partition's nodes, as written.
  std::vector<std::vector<SourceLocation>> partition_nodes_at;
};

void ReadInventory(yaml::Source& source, const YAML::Node& root, Inventory& inventory,
                   InventoryMarks& marks);
void CheckInventory(yaml::Source& source, Inventory& inventory, const InventoryMarks& marks);

// The `mirrors:` block (inventory_mirrors.cpp): each value checked by kind.
void ReadMirrors(yaml::Source& source, yaml::MapReader& m, Inventory& inventory,
                 InventoryMarks& marks);
// policy.air_gapped: an error for each mirrorable artefact the cluster would
// still fetch from the internet (the CNI manifest, the GPU Operator chart, the
// registries its images come from).
void CheckAirGappedMirrors(yaml::Source& source, const Inventory& inventory,
                           const InventoryMarks& marks);

// The `repositories:` block (inventory_repositories.cpp): url, key and
// fingerprint of each known repository, checked by kind.
void ReadRepositories(yaml::Source& source, yaml::MapReader& m, Inventory& inventory);
// policy.air_gapped: an error for each repository a node needs that has no url.
void CheckAirGappedRepositories(yaml::Source& source, const Inventory& inventory,
                                const InventoryMarks& marks);

// A `sysctl:` mapping (inventory_sysctl.cpp) at `where`: each kernel
// parameter name and value checked by kind, merged into `out` (a key written
// here replaces the one already there); a value Kubernetes cannot work with
// for a key gpuctl sets for it is an error (a warning for the IPv6 bridge).
void ReadSysctl(yaml::Source& source, const YAML::Node& map, const SourceLocation& where,
                Orchestrator orchestrator, std::map<std::string, std::string>& out);

// hardware.gpus.mig (inventory_mig.cpp): the MIG layout of `g`, whose model
// and count are read, checked against the model's profiles and placed on
// each GPU (mig.h); an error at the entry that does not fit.
void ReadMig(yaml::Source& source, yaml::MapReader& gpus, GpuExpectation& g);

// The `fabric:` block (inventory_fabric.cpp): the nodes that run the subnet
// manager, checked as host names here and as nodes on the fabric by
// CheckFabric.
void ReadFabric(yaml::Source& source, yaml::MapReader& m, Inventory& inventory,
                InventoryMarks& marks);
void CheckFabric(yaml::Source& source, const Inventory& inventory, const InventoryMarks& marks);

// Advice for a key that looks like an inline secret (see docs/inventory.md).
std::optional<std::string> SecretKeyAdvice(const std::string& key,
                                           const std::vector<std::string>& allowed);

}  // namespace gpuctl::detail
