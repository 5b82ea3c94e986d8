// Inventory, second pass: what no single value shows (duplicates, references
// to nodes, the CUDA/driver pairing), and the defaults derived from the rest.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "gpuctl/model/cuda_compat.h"
#include "gpuctl/model/syntax.h"
#include "gpuctl/model/value_kinds.h"
#include "inventory_internal.h"

namespace gpuctl::detail {

namespace {

constexpr const char* kDefaultPartition = "batch";

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string HostPort(const std::string& host, int port) {
  return IsIpv6(host) ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::vector<std::string> NodeNames(const Inventory& inv) {
  std::vector<std::string> names;
  for (const auto& n : inv.nodes) {
    names.push_back(n.name);
  }
  return names;
}

void CheckUnique(yaml::Source& source, const Inventory& inv, const InventoryMarks& marks) {
  std::map<std::string, std::size_t> names;
  std::map<std::string, std::size_t> endpoints;
  std::map<std::string, std::size_t> ib_addresses;
  for (std::size_t i = 0; i < inv.nodes.size(); ++i) {
    const Node& node = inv.nodes[i];
    const auto& at = marks.nodes_at[i];
    if (!node.name.empty()) {
      auto [it, fresh] = names.emplace(node.name, i);
      if (!fresh) {
        source.Error(at.name, fmt::format("duplicate node name '{}' (first at line {})", node.name,
                                          marks.nodes_at[it->second].name.line));
      }
    }
    // Lab nodes may share one address behind different forwarded ports, so
    // the pair is what must be unique.
    if (!node.address.empty()) {
      const std::string endpoint = HostPort(Lower(node.address), node.ssh.port);
      auto [it, fresh] = endpoints.emplace(endpoint, i);
      if (!fresh) {
        source.Error(at.address,
                     fmt::format("duplicate address {}: node '{}' (line {}) has it too", endpoint,
                                 inv.nodes[it->second].name, marks.nodes_at[it->second].name.line));
      }
    }
    if (!node.ib_address.empty()) {
      auto [it, fresh] = ib_addresses.emplace(Lower(node.ib_address), i);
      if (!fresh) {
        source.Error(at.ib_address, fmt::format("duplicate ib_address {}: node '{}' (line {}) "
                                                "has it too",
                                                node.ib_address, inv.nodes[it->second].name,
                                                marks.nodes_at[it->second].name.line));
      }
    }
  }
}

void CheckRoles(yaml::Source& source, const Inventory& inv, const InventoryMarks& marks) {
  // The master runs the control plane every other node depends on: removing
  // it is taking the cluster down, which is not what `state: absent` is for.
  for (std::size_t i = 0; i < inv.nodes.size(); ++i) {
    const Node& node = inv.nodes[i];
    if (node.absent && node.Has(Role::kMaster)) {
      source.Error(marks.nodes_at[i].state,
                   fmt::format("node '{}' is the master: it cannot leave the cluster it runs "
                               "(state: absent is for workers and storage nodes)",
                               node.name));
      return;
    }
  }
  const auto masters = inv.WithRole(Role::kMaster);
  if (masters.empty() && marks.has_nodes) {
    source.Error(marks.nodes, "no node has role 'master'; exactly one is needed");
  }
  for (std::size_t i = 1; i < masters.size(); ++i) {
    // A second master would run its own `kubeadm init`/slurmctld: two clusters.
    const auto index = static_cast<std::size_t>(masters[i] - inv.nodes.data());
    source.Error(marks.nodes_at[index].name,
                 fmt::format("node '{}' is a second master ('{}' is the first); gpuctl sets up "
                             "a single master",
                             masters[i]->name, masters[0]->name));
  }
  if (inv.orchestrator == Orchestrator::kSlurm && inv.WithRole(Role::kWorker).empty()) {
    source.Error(marks.orchestrator,
                 "orchestrator slurm needs at least one node with role 'worker' to run jobs");
  }
}

void CheckNfs(yaml::Source& source, Inventory& inv, const InventoryMarks& marks) {
  if (!inv.nfs) {
    return;
  }
  Nfs& nfs = *inv.nfs;
  if (!nfs.server.empty() && inv.Find(nfs.server) == nullptr) {
    source.Error(marks.nfs_server, fmt::format("nfs.server '{}' is not a node{}", nfs.server,
                                               yaml::DidYouMean(nfs.server, NodeNames(inv))));
  } else if (const Node* named = nfs.server.empty() ? nullptr : inv.Find(nfs.server);
             named != nullptr && named->absent) {
    source.Error(marks.nfs_server,
                 fmt::format("nfs.server '{}' has state absent: move the exports to a node that "
                             "stays before it leaves",
                             nfs.server));
  }
  if (nfs.server.empty()) {
    if (const Node* server = inv.NfsServer()) {
      nfs.server = server->name;
    }
  }
  // Exports default to the management network: the subnet when given, else
  // the master's /24, the common lab layout.
  std::string clients = inv.network.subnet;
  if (clients.empty() && inv.Master() != nullptr) {
    clients = Ipv4Slash24(inv.Master()->address).value_or("");
  }
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < nfs.exports.size(); ++i) {
    NfsExport& e = nfs.exports[i];
    paths.push_back(e.path);
    if (!e.clients.empty()) {
      continue;
    }
    if (clients.empty() && inv.Master() != nullptr) {
      source.Error(marks.exports_at[i],
                   fmt::format("cannot tell who may mount '{}': set its clients or "
                               "network.subnet (the master's address is not IPv4)",
                               e.path));
    }
    e.clients = clients;
  }
  for (std::size_t i = 0; i < nfs.mounts.size(); ++i) {
    const std::string& path = nfs.mounts[i].export_path;
    if (!path.empty() && std::find(paths.begin(), paths.end(), path) == paths.end()) {
      source.Error(marks.mount_exports_at[i],
                   fmt::format("mount of '{}', which nfs.exports does not export{}", path,
                               yaml::DidYouMean(path, paths)));
    }
  }
}

void CheckSlurm(yaml::Source& source, Inventory& inv, const InventoryMarks& marks) {
  if (inv.slurm && inv.orchestrator != Orchestrator::kSlurm) {
    source.Warning(marks.slurm, fmt::format("the slurm block is ignored: orchestrator is {}",
                                            ToString(inv.orchestrator)));
  }
  if (inv.orchestrator != Orchestrator::kSlurm) {
    return;
  }
  Slurm& slurm = inv.slurm ? *inv.slurm : inv.slurm.emplace();
  if (slurm.cluster_name.empty()) {
    slurm.cluster_name = inv.cluster;
  }
  std::vector<std::string> workers;
  for (const Node* n : inv.WithRole(Role::kWorker)) {
    workers.push_back(n->name);
  }
  // Partitions as written, parallel to their marks; the default one is added
  // after.
  std::size_t defaults = 0;
  for (std::size_t p = 0; p < slurm.partitions.size(); ++p) {
    SlurmPartition& partition = slurm.partitions[p];
    if (partition.is_default && ++defaults > 1) {
      source.Error(marks.partitions_at[p],
                   fmt::format("partition '{}' is a second default partition", partition.name));
    }
    for (std::size_t i = 0; i < partition.nodes.size(); ++i) {
      const std::string& name = partition.nodes[i];
      const SourceLocation& at = marks.partition_nodes_at[p][i];
      const Node* node = inv.Find(name);
      if (node == nullptr) {
        source.Error(at, fmt::format("partition '{}' names '{}', which is not a node{}",
                                     partition.name, name, yaml::DidYouMean(name, NodeNames(inv))));
      } else if (node->absent) {
        source.Error(at, fmt::format("partition '{}' names '{}', which has state absent: take it "
                                     "out of the partition",
                                     partition.name, name));
      } else if (!node->Has(Role::kWorker)) {
        source.Error(at, fmt::format("partition '{}' names '{}', which is not a worker (only "
                                     "workers run slurmd)",
                                     partition.name, name));
      }
    }
    if (partition.nodes.empty()) {
      partition.nodes = workers;
    }
  }
  if (slurm.partitions.empty()) {
    slurm.partitions.push_back({kDefaultPartition, workers, true, "", ""});
  }
}

void CheckCuda(yaml::Source& source, const Inventory& inv, const InventoryMarks& marks) {
  // An invalid driver value is an error where it was read; judging it
  // against CUDA too would only add a second line about the same mistake.
  if (!DriverVersionProblem(inv.versions.driver_branch).empty()) return;
  const CudaDriverCheck check = CheckCudaDriver(inv.versions.cuda, inv.versions.driver_branch);
  // Point at whichever of the pair the admin wrote, the CUDA version first.
  const SourceLocation where = marks.cuda.line > 0            ? marks.cuda
                               : marks.driver_branch.line > 0 ? marks.driver_branch
                                                              : SourceLocation{source.file(), 0, 0};
  switch (check.fit) {
    case CudaDriverFit::kFull:
    case CudaDriverFit::kBadDriver:  // reported where the branch was read
      return;
    case CudaDriverFit::kMinorVersionCompat:
      source.Warning(where, check.message);
      return;
    case CudaDriverFit::kTooOld:
    case CudaDriverFit::kUnknownCuda:
      source.Error(where, check.message);
      return;
  }
}

// NVIDIA packages cuDNN 8 for CUDA 11 and 12 only (libcudnn8
// 8.9.7.29-1+cuda12.2 is the last), and cuDNN 9 from CUDA 11 on; an older
// major is in none of the repositories gpuctl configures. Caught here, a
// wrong pair is a line in validate, not a failed apply on every GPU node.
void CheckCudnn(yaml::Source& source, const Inventory& inv, const InventoryMarks& marks) {
  const std::string& cudnn = inv.versions.cudnn;
  const int major = std::atoi(cudnn.substr(0, cudnn.find('.')).c_str());
  const int cuda_major =
      std::atoi(inv.versions.cuda.substr(0, inv.versions.cuda.find('.')).c_str());
  const SourceLocation where =
      marks.cudnn.line > 0 ? marks.cudnn : SourceLocation{source.file(), 0, 0};
  if (major < 8) {
    source.Error(where, fmt::format("versions.cudnn {}: NVIDIA's repositories carry cuDNN 8 and 9 "
                                    "for CUDA 11 and later; use 8.x or 9.x",
                                    cudnn));
  } else if (major == 8 && cuda_major >= 13) {
    source.Error(where, fmt::format("versions.cudnn {}: cuDNN 8 is built for CUDA 11 and 12 "
                                    "only, and versions.cuda is {}; use cuDNN 9 (e.g. 9.13)",
                                    cudnn, inv.versions.cuda));
  }
}

// An HGX/DGX baseboard's model, as nvidia-smi names it: SXM modules, which
// in eights (sixteens on HGX-2) sit on NVSwitch. PCIe and NVL cards never do,
// and H100 SXM5 reports itself as "NVIDIA H100 80GB HBM3".
bool IsSxmBoardModel(const std::string& model) {
  std::string m = Lower(model);
  if (m.rfind("nvidia ", 0) == 0) {
    m.erase(0, 7);
  }
  if (m.find("pcie") != std::string::npos || m.find("nvl") != std::string::npos) {
    return false;
  }
  if (m.find("sxm") != std::string::npos) {
    return true;
  }
  const std::string first = m.substr(0, m.find_first_of(" -"));
  if (first == "h100") {
    return m.find("hbm3") != std::string::npos;
  }
  return first == "h200" || first == "h800" || first == "h20" || first == "b100" || first == "b200";
}

// An 8-GPU SXM board whose inventory does not say whether it is on NVSwitch:
// the NVSwitch ones need Fabric Manager, or CUDA fails (error 802) while
// nvidia-smi looks healthy. Once per place written (a range or node_defaults
// gives many nodes one block).
void CheckNvswitch(yaml::Source& source, const Inventory& inv, const InventoryMarks& marks) {
  constexpr int kBoardGpus = 8;
  std::map<std::pair<int, int>, std::vector<const Node*>> unset;
  std::vector<std::pair<int, int>> order;
  for (std::size_t i = 0; i < inv.nodes.size(); ++i) {
    const Node& node = inv.nodes[i];
    const auto& gpus = node.hardware.gpus;
    if (!gpus || gpus->nvswitch || gpus->count < kBoardGpus || !IsSxmBoardModel(gpus->model)) {
      continue;
    }
    const SourceLocation& at = marks.nodes_at[i].gpus;
    auto& nodes = unset[{at.line, at.column}];
    if (nodes.empty()) {
      order.emplace_back(at.line, at.column);
    }
    nodes.push_back(&node);
  }
  for (const auto& key : order) {
    const auto& nodes = unset[key];
    const Node& first = *nodes.front();
    const std::string who = nodes.size() == 1 ? fmt::format("node {}", first.name)
                                              : fmt::format("{} nodes ({} .. {})", nodes.size(),
                                                            first.name, nodes.back()->name);
    const auto index = static_cast<std::size_t>(&first - inv.nodes.data());
    source.Warning(marks.nodes_at[index].gpus,
                   fmt::format("{}: {}x {} is an HGX/DGX board, usually on NVSwitch; set "
                               "hardware.gpus.nvswitch (true: gpuctl installs NVIDIA Fabric "
                               "Manager, without which CUDA fails with error 802 \"system not "
                               "yet initialized\"; false: a board without NVSwitch)",
                               who, first.hardware.gpus->count, first.hardware.gpus->model));
  }
}

}  // namespace

void CheckInventory(yaml::Source& source, Inventory& inventory, const InventoryMarks& marks) {
  CheckUnique(source, inventory, marks);
  CheckRoles(source, inventory, marks);
  CheckNfs(source, inventory, marks);
  CheckSlurm(source, inventory, marks);
  CheckCuda(source, inventory, marks);
  CheckCudnn(source, inventory, marks);
  CheckNvswitch(source, inventory, marks);
  CheckFabric(source, inventory, marks);
  CheckAirGappedMirrors(source, inventory, marks);
  CheckAirGappedRepositories(source, inventory, marks);
}

}  // namespace gpuctl::detail
