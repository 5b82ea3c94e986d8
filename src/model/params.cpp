#include "gpuctl/model/params.h"
#include "gpuctl/util/text.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpuctl/model/repositories.h"
#include "gpuctl/model/syntax.h"
#include "gpuctl/model/value_kinds.h"
#include "gpuctl/model/yaml_source.h"
#include "gpuctl/util/digest.h"

namespace gpuctl {

RenderError::RenderError(const std::string& parameter, const std::string& problem)
    : std::logic_error(fmt::format("internal error: parameter {} would be written with {}; the "
                                   "inventory loader should have refused the value",
                                   parameter, problem)) {}

namespace {

// The line-oriented parameters: one record a line, fields split at spaces
// (the scripts read them with awk, `read` or `for`). Every other parameter
// is a single value. Each record is built by Fields(), which refuses a
// field that would break the format.
bool IsMultiLine(const std::string& name) {
  static const std::set<std::string> kNames = {
      "gpu_counts",  "mig_layout",       "gpu_nodes",     "gpu_workers",
      "hosts",       "nfs_exports",      "nfs_mounts",    "registry_mirrors",
      "slurm_nodes", "slurm_partitions", "ssh_host_keys", "sysctl"};
  return kNames.count(name) > 0 || name.rfind("repo_", 0) == 0;
}

// The first character of `text` that is not allowed in a field of a
// line-oriented value ("a line break", "whitespace"); "" when none.
std::string BadFieldChar(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return DescribeChar(c);
    }
  }
  return "";
}

// One record of the line-oriented parameter `param`: the fields joined by a
// space. A field with a line break would start a record of its own (another
// /etc/exports or fstab line, another Slurm partition), one with a space
// would shift the fields after it: either is a bug upstream, never written.
std::string Fields(std::string_view param, std::initializer_list<std::string_view> fields) {
  std::string line;
  for (std::string_view field : fields) {
    if (const std::string bad = BadFieldChar(field); !bad.empty()) {
      throw RenderError(std::string(param), fmt::format("a field holding {}", bad));
    }
    if (!line.empty()) {
      line += ' ';
    }
    line += field;
  }
  return line;
}

// A single-line parameter's value, or one value of a key=value record.
void CheckSingleLine(std::string_view param, std::string_view value) {
  for (char c : value) {
    if (c == '\n' || c == '\r' || c == '\0') {
      throw RenderError(std::string(param), fmt::format("a value holding {}", DescribeChar(c)));
    }
  }
}

std::string Bool(bool value) { return value ? "true" : "false"; }

std::string Names(const std::vector<const Node*>& nodes, std::string_view separator) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const Node* n : nodes) {
    names.push_back(n->name);
  }
  return Join(names, separator);
}

std::string Roles(const Node& node) {
  std::vector<std::string> roles;
  for (Role r : node.roles) {
    roles.push_back(ToString(r));
  }
  return Join(roles, " ");
}

// The gres type of a whole GPU on a node that also runs MIG devices (every
// GPU record there is typed): the model as Slurm's NVML detection spells it,
// lower case without the vendor, "a100-sxm4-80gb".
std::string WholeGpuType(std::string_view model) {
  constexpr std::string_view kVendor = "nvidia_";
  std::string type;
  for (char c : model) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    type += (std::isalnum(static_cast<unsigned char>(c)) != 0 || lower == '-' || lower == '.')
                ? lower
                : '_';
  }
  if (type.rfind(kVendor, 0) == 0 && type.size() > kVendor.size()) {
    type.erase(0, kVendor.size());
  }
  return type;
}

// A Slurm node's line of slurm_nodes: "name address gres whole type indices".
// gres is slurm.conf's Gres value ("gpu:8"; "gpu:a100-sxm4-80gb:2,gpu:1g.10gb:42"
// with MIG; "-" without GPUs); whole is the count of GPUs without MIG; type
// and indices ("-" unless the node runs MIG) are those GPUs' gres type and
// their indices, each then its own typed gres.conf record beside the MIG
// devices, whose device files only the node can tell (slurm.config's input).
std::string SlurmNode(const Node& n) {
  const int gpus = n.GpuCount();
  if (!n.RunsMig()) {
    return Fields("slurm_nodes", {n.name, n.address, gpus > 0 ? fmt::format("gpu:{}", gpus) : "-",
                                  std::to_string(gpus), "-", "-"});
  }
  const auto& layout = *n.hardware.gpus->mig;
  std::vector<std::string> whole;
  std::map<std::string, int> mig;
  for (std::size_t i = 0; i < static_cast<std::size_t>(gpus); ++i) {
    if (i >= layout.size() || layout[i].empty()) {
      whole.push_back(std::to_string(i));
    } else {
      for (const MigPlacement& p : layout[i]) {
        ++mig[p.profile];
      }
    }
  }
  const std::string type = WholeGpuType(n.hardware.gpus->model);
  std::vector<std::string> gres;
  if (!whole.empty()) {
    gres.push_back(fmt::format("gpu:{}:{}", type, whole.size()));
  }
  for (const auto& [profile, count] : mig) {
    gres.push_back(fmt::format("gpu:{}:{}", profile, count));
  }
  return Fields("slurm_nodes", {n.name, n.address, Join(gres, ","), std::to_string(whole.size()),
                                type, whole.empty() ? "-" : Join(whole, ",")});
}

std::string IbPorts(const Node& node) {
  std::vector<std::string> ports;
  ports.reserve(node.hardware.ib.size());
  for (const auto& p : node.hardware.ib) {
    ports.push_back(Fields("ib_ports", {fmt::format("{}:{}:{}", p.device, p.port, p.rate_gbps)}));
  }
  return Join(ports, " ");
}

// "GPU PROFILE:START,PROFILE:START" per GPU of a node whose inventory sets a
// MIG layout, "GPU off" for a GPU without MIG: what gpu.mig-mode and
// gpu.mig-instances make true (the placements are mig.h's).
std::string MigLayout(const Node& node) {
  if (!node.SetsMig()) {
    return "";
  }
  std::vector<std::string> lines;
  const auto& gpus = *node.hardware.gpus->mig;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    std::vector<std::string> instances;
    for (const MigPlacement& p : gpus[i]) {
      instances.push_back(fmt::format("{}:{}", p.profile, p.start));
    }
    lines.push_back(Fields("mig_layout",
                           {std::to_string(i), instances.empty() ? "off" : Join(instances, ",")}));
  }
  return Join(lines, "\n");
}

// One line per worker with GPUs: "name gpus dev:port,dev:port mig" ("-" when
// the node has no IB port; "mig" when some of its GPUs run MIG instances,
// else "-"), for the validation steps run from the master.
std::string GpuWorkers(const Inventory& inv) {
  std::vector<std::string> lines;
  for (const Node* n : inv.WithRole(Role::kWorker)) {
    if (n->GpuCount() == 0) {
      continue;
    }
    std::vector<std::string> ports;
    for (const auto& p : n->hardware.ib) {
      ports.push_back(fmt::format("{}:{}", p.device, p.port));
    }
    lines.push_back(Fields("gpu_workers",
                           {n->name, std::to_string(n->GpuCount()),
                            ports.empty() ? "-" : Join(ports, ","), n->RunsMig() ? "mig" : "-"}));
  }
  return Join(lines, "\n");
}

// The names of the nodes leaving the cluster (state: absent), space-separated
// in inventory order: what the control plane still has to forget.
std::string LeavingNodes(const Inventory& inv) {
  std::vector<std::string> names;
  for (const auto& n : inv.nodes) {
    if (n.absent) {
      names.push_back(n.name);
    }
  }
  return Join(names, " ");
}

// /etc/hosts lines: every management address, then the IB addresses as
// <name>-ib so MPI and NCCL can be pointed at the fabric by name.
std::string Hosts(const Inventory& inv) {
  std::vector<std::string> lines;
  for (const auto& n : inv.nodes) {
    if (n.absent) {
      continue;  // leaving: in no cluster-wide value
    }
    lines.push_back(Fields("hosts", {n.address, n.name}));
  }
  for (const auto& n : inv.nodes) {
    if (n.absent) {
      continue;  // leaving: in no cluster-wide value
    }
    if (!n.ib_address.empty()) {
      lines.push_back(Fields("hosts", {n.ib_address, n.name + "-ib"}));
    }
  }
  return Join(lines, "\n");
}

// The fewest CIDR blocks that hold exactly `addresses` (sorted, unique IPv4
// addresses as numbers), a block of one written as the bare address.
std::vector<std::string> Ipv4Blocks(const std::vector<std::uint32_t>& addresses) {
  std::vector<std::string> blocks;
  for (std::size_t i = 0; i < addresses.size();) {
    const std::uint64_t start = addresses[i];
    std::uint64_t size = 1;
    int prefix = 32;
    // Double the block while it stays aligned and every address in it is
    // one of ours: sorted and unique, that is its last one being there.
    while (prefix > 0) {
      const std::uint64_t next = size * 2;
      if (start % next != 0 || i + next - 1 >= addresses.size() ||
          addresses[i + next - 1] != start + next - 1) {
        break;
      }
      size = next;
      --prefix;
    }
    in_addr a{};
    a.s_addr = htonl(static_cast<std::uint32_t>(start));
    std::array<char, INET_ADDRSTRLEN> text{};
    inet_ntop(AF_INET, &a, text.data(), text.size());
    blocks.push_back(prefix == 32 ? std::string(text.data())
                                  : fmt::format("{}/{}", text.data(), prefix));
    i += size;
  }
  return blocks;
}

// What every node's firewall trusts on every port (os.firewall): each
// node's management and IB address, and with Kubernetes the pod network
// (pods reach node ports with their own addresses). IPv4 addresses fold into
// the fewest blocks holding those addresses and no other, so a rack of
// consecutive addresses is one rule, not one per node (a firewall with a
// rule per node of a 10,000-node cluster is slow to load and to probe); IPv6
// addresses and host names stay as they are, for the node to resolve.
std::string TrustedSources(const Inventory& inv) {
  std::vector<std::uint32_t> v4;
  std::vector<std::string> others;
  std::set<std::string> seen;
  auto add = [&](const std::string& address) {
    in_addr parsed{};
    if (address.empty()) {
      return;
    }
    if (inet_pton(AF_INET, address.c_str(), &parsed) == 1) {
      v4.push_back(ntohl(parsed.s_addr));
    } else if (seen.insert(address).second) {
      others.push_back(Fields("trusted_sources", {address}));
    }
  };
  for (const auto& n : inv.nodes) {
    if (n.absent) {
      continue;  // leaving: in no cluster-wide value
    }
    add(n.address);
  }
  for (const auto& n : inv.nodes) {
    if (n.absent) {
      continue;  // leaving: in no cluster-wide value
    }
    add(n.ib_address);
  }
  std::sort(v4.begin(), v4.end());
  v4.erase(std::unique(v4.begin(), v4.end()), v4.end());
  std::vector<std::string> words = Ipv4Blocks(v4);
  words.insert(words.end(), others.begin(), others.end());
  if (inv.orchestrator == Orchestrator::kKubernetes && !inv.network.pod_cidr.empty()) {
    words.push_back(Fields("trusted_sources", {inv.network.pod_cidr}));
  }
  return Join(words, " ");
}

// "name address type key" per node whose host key gpuctl's connection saw
// (Node::host_key), in inventory order; nodes not reached are left out.
std::string SshHostKeys(const Inventory& inv) {
  std::vector<std::string> lines;
  for (const auto& n : inv.nodes) {
    if (n.absent) {
      continue;  // leaving: in no cluster-wide value
    }
    const auto space = n.host_key.find(' ');
    if (space == std::string::npos) {
      continue;
    }
    lines.push_back(Fields("ssh_host_keys", {n.name, n.address, n.host_key.substr(0, space),
                                             n.host_key.substr(space + 1)}));
  }
  return Join(lines, "\n");
}

// One "<name> <address>" line per node whose hardware declares GPUs, in
// inventory order: what a monitoring server scrapes (dcgm-exporter).
std::string GpuNodes(const Inventory& inv) {
  std::vector<std::string> lines;
  for (const auto& n : inv.nodes) {
    if (n.absent) {
      continue;  // leaving: in no cluster-wide value
    }
    if (n.GpuCount() > 0) {
      lines.push_back(Fields("gpu_nodes", {n.name, n.address}));
    }
  }
  return Join(lines, "\n");
}

// The GPU Operator's mig.strategy: "" when no Kubernetes node runs MIG;
// "single" when each that does runs it on every GPU, all with one profile;
// else "mixed".
std::string MigStrategy(const Inventory& inv) {
  std::set<std::string> profiles;
  bool any = false;
  bool partial = false;
  for (const auto& n : inv.nodes) {
    if (n.absent || !(n.Has(Role::kMaster) || n.Has(Role::kWorker)) || !n.RunsMig()) {
      continue;
    }
    any = true;
    for (const auto& gpu : *n.hardware.gpus->mig) {
      partial = partial || gpu.empty();
      for (const MigPlacement& instance : gpu) {
        profiles.insert(instance.profile);
      }
    }
  }
  if (!any || inv.orchestrator != Orchestrator::kKubernetes) {
    return "";
  }
  return !partial && profiles.size() == 1 ? "single" : "mixed";
}

// "name count" per Kubernetes node (master or worker) with GPUs, one a line:
// what each should advertise as allocatable nvidia.com/gpu.
//
// With MIG the GPU Operator's device plugin advertises MIG devices by its
// mig.strategy (MigStrategy): "single" counts them as nvidia.com/gpu,
// "mixed" as nvidia.com/mig-<profile> beside the whole GPUs; those follow
// the count as "mig-<profile>=N" fields.
std::string GpuCounts(const Inventory& inv, const std::string& strategy) {
  std::vector<std::string> lines;
  for (const auto& n : inv.nodes) {
    if (n.absent) {
      continue;  // leaving: in no cluster-wide value
    }
    if (!(n.Has(Role::kMaster) || n.Has(Role::kWorker)) || n.GpuCount() <= 0) {
      continue;
    }
    int whole = n.GpuCount();
    std::map<std::string, int> mig;
    if (n.RunsMig()) {
      whole = 0;
      for (const auto& gpu : *n.hardware.gpus->mig) {
        whole += gpu.empty() ? 1 : 0;
        for (const MigPlacement& instance : gpu) {
          ++mig[instance.profile];
        }
      }
    }
    // Single: one profile, its instances the node's nvidia.com/gpu.
    if (strategy == "single" && !mig.empty()) {
      lines.push_back(Fields("gpu_counts", {n.name, std::to_string(mig.begin()->second)}));
      continue;
    }
    std::string line = Fields("gpu_counts", {n.name, std::to_string(whole)});
    for (const auto& [profile, count] : mig) {
      line += fmt::format(" mig-{}={}", profile, count);
    }
    lines.push_back(line);
  }
  return Join(lines, "\n");
}

void AddNfs(const Inventory& inv, std::map<std::string, std::string>& values) {
  const Node* server = inv.NfsServer();
  values["nfs_server_name"] = server != nullptr ? server->name : "";
  values["nfs_server_address"] = server != nullptr ? server->address : "";
  std::vector<std::string> exports;
  std::vector<std::string> mounts;
  if (inv.nfs && server != nullptr) {
    for (const auto& e : inv.nfs->exports) {
      exports.push_back(Fields("nfs_exports", {e.path, e.clients}));
    }
    // mount(8) wants an IPv6 server in brackets before the ':'.
    const std::string host =
        IsIpv6(server->address) ? fmt::format("[{}]", server->address) : server->address;
    for (const auto& m : inv.nfs->mounts) {
      mounts.push_back(Fields(
          "nfs_mounts", {fmt::format("{}:{}", host, m.export_path), m.mount_point, m.options}));
    }
  }
  values["nfs_exports"] = Join(exports, "\n");
  values["nfs_mounts"] = Join(mounts, "\n");
}

void AddSlurm(const Inventory& inv, std::map<std::string, std::string>& values) {
  std::vector<std::string> partitions;
  if (inv.slurm) {
    for (const auto& p : inv.slurm->partitions) {
      // A partition without nodes means every worker (inventory.h).
      std::string nodes = Join(p.nodes, ",");
      if (p.nodes.empty()) {
        nodes = Names(inv.WithRole(Role::kWorker), ",");
      }
      // "name nodes default max_time default_time", '-' for no DefaultTime.
      partitions.push_back(Fields(
          "slurm_partitions",
          {p.name, nodes, p.is_default ? "YES" : "NO",
           p.max_time.empty() ? std::string_view("INFINITE") : std::string_view(p.max_time),
           p.default_time.empty() ? std::string_view("-") : std::string_view(p.default_time)}));
    }
  }
  values["slurm_cluster_name"] =
      !inv.slurm ? "" : (inv.slurm->cluster_name.empty() ? inv.cluster : inv.slurm->cluster_name);
  values["slurm_partitions"] = Join(partitions, "\n");
  // Every worker is a Slurm node (SlurmNode), so each node can write the
  // same slurm.conf and gres.conf.
  std::vector<std::string> nodes;
  if (inv.slurm) {
    for (const Node* n : inv.WithRole(Role::kWorker)) {
      nodes.push_back(SlurmNode(*n));
    }
  }
  values["slurm_nodes"] = Join(nodes, "\n");
}

// Where gpuctl fetches from when the inventory names no mirror: flannel's and
// Calico's release manifests and NVIDIA's chart repository. They live here,
// not in the playbooks, so a script run for an air-gapped inventory never
// names them.
constexpr const char* kFlannelManifest =
    "https://github.com/flannel-io/flannel/releases/download/v0.26.1/kube-flannel.yml";
constexpr const char* kCalicoManifest =
    "https://raw.githubusercontent.com/projectcalico/calico/v3.28.1/manifests/calico.yaml";
constexpr const char* kNgcCharts = "https://helm.ngc.nvidia.com/nvidia";

// "registry mirror server" per mirrored registry, one a line (sorted by
// registry): what containers.registry-mirrors writes as hosts.toml files.
// containerd tries the mirror first and falls back to `server`: the registry
// itself (docker.io's API is registry-1.docker.io), except on an air-gapped
// site, where the fallback is the mirror again, so no node ever tries the
// internet and no script names it.
std::string RegistryMirrors(const Inventory& inv) {
  std::vector<std::string> lines;
  for (const auto& [registry, mirror] : inv.mirrors.registries) {
    const std::string upstream =
        "https://" + (registry == "docker.io" ? std::string("registry-1.docker.io") : registry);
    lines.push_back(
        Fields("registry_mirrors", {registry, mirror, inv.policy.air_gapped ? mirror : upstream}));
  }
  return Join(lines, "\n");
}

// repo_<name> per known repository ('-' as '_'): its description for the
// node (repositories.h), empty when the node's OS has no such repository. One
// parameter per repository, so a repos.* step's digest changes exactly when
// its own repository does.
void AddRepositories(const Inventory& inv, const Node& node,
                     std::map<std::string, std::string>& values) {
  for (const std::string& name : RepositoryNames()) {
    std::string key = "repo_" + name;
    std::replace(key.begin(), key.end(), '-', '_');
    const auto repo = ResolveRepository(name, inv, node);
    if (repo) {
      // One key=value a line: a value with a line break would add a key.
      for (const std::string* field : {&repo->uri, &repo->suites, &repo->components, &repo->baseurl,
                                       &repo->key, &repo->fingerprint}) {
        CheckSingleLine(key, *field);
      }
    }
    values[key] = repo ? repo->Describe() : "";
  }
}

// "key = value" per kernel parameter the inventory sets for the node, sorted
// by key: what os.sysctl writes over the catalog's defaults. A key never
// holds whitespace and a value never a line break (value_kinds.h refused
// them); a value's single spaces separate its words (tcp_rmem's three).
std::string Sysctl(const Node& node) {
  std::vector<std::string> lines;
  for (const auto& [key, value] : node.sysctl) {
    CheckSingleLine("sysctl", value);
    lines.push_back(Fields("sysctl", {key}) + " = " + value);
  }
  return Join(lines, "\n");
}

// A threshold a deep validation compares with; empty when there is none.
std::string Threshold(int value) { return value > 0 ? std::to_string(value) : ""; }

}  // namespace

const std::vector<std::string>& KnownParameters() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names = {
        "cluster",
        "cni",
        "cni_manifest",
        "compute_interface",
        "fabric",
        "container_toolkit_version",
        "cuda_image",
        "cuda_version",
        "cudnn_version",
        "disable_firewall",
        "disable_selinux",
        "docker",
        "driver_branch",
        "driver_version",
        "gpu_count",
        "gpu_model",
        "gpu_counts",
        "gpu_nodes",
        "gpu_operator_chart",
        "gpu_operator_version",
        "gpu_workers",
        "hosts",
        "hosts_sha256",
        "ib_address",
        "ib_min_bw",
        "ib_ports",
        "kubernetes_version",
        "master_address",
        "master_name",
        "mig_layout",
        "mig_strategy",
        "nccl_min_busbw",
        "nccl_version",
        "nfs_exports",
        "nfs_mounts",
        "nfs_server_address",
        "nfs_server_name",
        "node_address",
        "node_name",
        "node_roles",
        "ntp_servers",
        "nvswitch",
        "ofed_version",
        "orchestrator",
        "os_family",
        "os_id",
        "os_version",
        "pod_cidr",
        "registry_mirrors",
        "leaving_nodes",
        "repo_container_toolkit",
        "repo_cuda",
        "repo_docker",
        "repo_epel",
        "repo_helm",
        "repo_kubernetes",
        "repo_ofed",
        "service_cidr",
        "slurm_cluster_name",
        "slurm_nodes",
        "slurm_partitions",
        "slurm_version",
        "ssh_host_keys",
        "subnet",
        "subnet_manager_priority",
        "subnet_managers",
        "sysctl",
        "trusted_sources",
        "worker_names",
    };
    std::sort(names.begin(), names.end());
    return names;
  }();
  return kNames;
}

bool IsKnownParameter(const std::string& name) {
  const auto& names = KnownParameters();
  return std::binary_search(names.begin(), names.end(), name);
}

ParameterTable::ParameterTable(const Inventory& inventory) : inventory_(inventory) {
  const Inventory& inv = inventory;
  const Versions& v = inv.versions;
  const Node* master = inv.Master();
  const std::string mig_strategy = MigStrategy(inv);
  std::map<std::string, std::string> values = {
      {"cluster", inv.cluster},
      // The branch names the packages; the exact release, when the inventory
      // gives one, pins them ("" for a branch alone).
      {"driver_branch", v.driver_branch.substr(0, v.driver_branch.find('.'))},
      {"driver_version",
       v.driver_branch.find('.') == std::string::npos ? std::string() : v.driver_branch},
      {"cuda_version", v.cuda},
      {"cudnn_version", v.cudnn},
      {"nccl_version", v.nccl},
      {"ofed_version", v.ofed},
      {"container_toolkit_version", v.container_toolkit},
      {"kubernetes_version", v.kubernetes},
      {"cni", v.cni},
      {"gpu_operator_version", v.gpu_operator},
      {"slurm_version", v.slurm},
      {"gpu_nodes", GpuNodes(inv)},
      {"gpu_counts", GpuCounts(inv, mig_strategy)},
      {"mig_strategy", mig_strategy},
      {"pod_cidr", inv.network.pod_cidr},
      {"service_cidr", inv.network.service_cidr},
      {"subnet", inv.network.subnet},
      {"ntp_servers", fmt::format("{}", fmt::join(inv.network.ntp_servers, " "))},
      {"master_name", master != nullptr ? master->name : ""},
      {"master_address", master != nullptr ? master->address : ""},
      {"hosts", Hosts(inv)},
      {"worker_names", Names(inv.WithRole(Role::kWorker), " ")},
      {"leaving_nodes", LeavingNodes(inv)},
      {"gpu_workers", GpuWorkers(inv)},
      {"orchestrator", ToString(inv.orchestrator)},
      {"disable_firewall", Bool(inv.policy.disable_firewall)},
      {"disable_selinux", Bool(inv.policy.disable_selinux)},
      {"docker", Bool(inv.policy.docker)},
      {"nccl_min_busbw", Threshold(inv.validation.nccl_min_busbw_gbps)},
      {"ib_min_bw", Threshold(inv.validation.ib_min_bw_gbps)},
      {"cuda_image", inv.validation.cuda_image},
      {"cni_manifest", !inv.mirrors.cni_manifest.empty() ? inv.mirrors.cni_manifest
                       : v.cni == "calico"               ? kCalicoManifest
                                                         : kFlannelManifest},
      {"gpu_operator_chart",
       inv.mirrors.gpu_operator_chart.empty() ? kNgcCharts : inv.mirrors.gpu_operator_chart},
      {"registry_mirrors", RegistryMirrors(inv)},
      // For messages: who is meant to bring the fabric up ("" : the switches).
      {"subnet_managers", inv.fabric.subnet_manager.empty()
                              ? std::string()
                              : fmt::format("{}{}", inv.fabric.subnet_manager,
                                            inv.fabric.subnet_manager_standby.empty()
                                                ? ""
                                                : " " + inv.fabric.subnet_manager_standby)},
  };
  // What os.hosts' probe compares its block with (the block's lines, each
  // ending in a newline, through sha256sum), so a plan does not send every
  // node's hosts line to every node: only the change writes them.
  values["hosts_sha256"] = Sha256Hex(values.at("hosts") + "\n");
  values["trusted_sources"] = TrustedSources(inv);
  values["ssh_host_keys"] = SshHostKeys(inv);
  AddNfs(inv, values);
  AddSlurm(inv, values);
  for (auto& [name, value] : values) {
    if (!IsMultiLine(name)) {
      CheckSingleLine(name, value);
    }
    cluster_.emplace(name, SharedText(std::move(value)));
  }
  for (const std::string& name : KnownParameters()) {
    export_names_.emplace(name, ExportName(name));
  }
}

NodeParameters ParameterTable::For(const Node& node) const {
  std::map<std::string, std::string> own = {
      {"node_name", node.name},
      {"node_address", node.address},
      {"node_roles", Roles(node)},
      {"os_id", node.os.id},
      {"os_version", node.os.version},
      {"os_family", ToString(node.os.family)},
      {"gpu_model", node.hardware.gpus ? node.hardware.gpus->model : ""},
      {"gpu_count", std::to_string(node.GpuCount())},
      {"ib_ports", IbPorts(node)},
      {"ib_address", node.ib_address},
      {"compute_interface", node.compute_interface},
      // GPUs or RDMA ports: the node runs NCCL (os.sysctl's network buffers).
      {"fabric", Bool(node.OnFabric())},
      {"sysctl", Sysctl(node)},
      // OpenSM's priority here; "" where the node runs none.
      {"subnet_manager_priority", inventory_.SubnetManagerPriority(node) > 0
                                      ? std::to_string(inventory_.SubnetManagerPriority(node))
                                      : ""},
      // "true", "false", or "" when the inventory does not say.
      {"nvswitch", node.hardware.gpus && node.hardware.gpus->nvswitch
                       ? Bool(*node.hardware.gpus->nvswitch)
                       : ""},
      {"mig_layout", MigLayout(node)},
  };
  std::map<std::string, SharedText> shared;
  {
    // The same for every node of one OS (repositories.h): built once per OS.
    std::lock_guard lock(repositories_mutex_);
    const std::string os = node.os.Name() + "/" + ToString(node.os.family);
    auto [held, fresh] = repositories_by_os_.try_emplace(os);
    if (fresh) {
      std::map<std::string, std::string> repos;
      AddRepositories(inventory_, node, repos);
      for (auto& [name, value] : repos) {
        held->second.emplace(name, SharedText(std::move(value)));
      }
    }
    shared.insert(held->second.begin(), held->second.end());
  }
  for (auto& [name, value] : own) {
    if (!IsMultiLine(name)) {
      CheckSingleLine(name, value);
    }
    shared.emplace(name, SharedText(std::move(value)));
  }
  return {cluster_, export_names_, std::move(shared)};
}

StepEnv NodeParameters::Environment(const std::vector<std::string>& names) const {
  StepEnv env;
  for (const auto& name : names) {
    auto it = own_.find(name);
    if (it == own_.end()) {
      it = cluster_->find(name);
      if (it == cluster_->end()) {
        // The catalog loader rejects unknown names, so this is a bug, not input.
        throw std::invalid_argument(fmt::format("unknown step parameter '{}'", name));
      }
    }
    env.emplace(export_names_->at(name), it->second);
  }
  return env;
}

std::map<std::string, std::string> NodeParameters::All() const {
  std::map<std::string, std::string> plain;
  for (const auto* values : {&own_, cluster_}) {
    for (const auto& [name, value] : *values) {
      plain.emplace(name, value.str());
    }
  }
  return plain;
}

std::map<std::string, std::string> PlainEnvironment(const StepEnv& env) {
  std::map<std::string, std::string> plain;
  for (const auto& [name, value] : env) {
    plain.emplace(name, value.str());
  }
  return plain;
}

std::map<std::string, std::string> ParameterValues(const Inventory& inventory, const Node& node) {
  return ParameterTable(inventory).For(node).All();
}

std::map<std::string, std::string> StepEnvironment(const std::vector<std::string>& names,
                                                   const Inventory& inventory, const Node& node) {
  return PlainEnvironment(ParameterTable(inventory).For(node).Environment(names));
}

std::string ExportName(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return "GPUCTL_" + upper;
}

const std::vector<std::string>& KnownSecrets() {
  static const std::vector<std::string> kNames = {"munge_key"};
  return kNames;
}

bool IsKnownSecret(const std::string& name) {
  const auto& names = KnownSecrets();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::map<std::string, std::string> SecretEnvironment(const std::vector<std::string>& names,
                                                     const Inventory& inventory) {
  std::map<std::string, std::string> env;
  for (const auto& name : names) {
    std::string variable;
    if (name == "munge_key" && inventory.slurm) {
      variable = inventory.slurm->munge_key_env;
    }
    const char* value = variable.empty() ? nullptr : std::getenv(variable.c_str());
    if (value != nullptr && *value != '\0') {
      env[ExportName(name)] = value;
    }
  }
  return env;
}

}  // namespace gpuctl
