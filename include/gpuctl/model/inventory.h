// Inventory: the admin's intent for a cluster, read from YAML.
//
// Only intent lives here. What probes discover on a node (Facts) is kept in
// the Plan, never written back into these types, so a saved plan can tell
// "what you asked for" from "what the node said".
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuctl/model/diagnostic.h"
#include "gpuctl/model/mig.h"

namespace gpuctl {

enum class Role { kMaster, kWorker, kStorage };
enum class OsFamily { kDebian, kRhel };  // apt/dpkg vs dnf/rpm
enum class Orchestrator { kKubernetes, kSlurm, kNone };

std::string ToString(Role role);
std::string ToString(OsFamily family);
std::string ToString(Orchestrator orchestrator);
std::optional<Role> ParseRole(const std::string& text);

// An operating system a node may run. Known names: ubuntu-20.04, ubuntu-22.04,
// ubuntu-24.04, debian-12 (apt); rocky-8, rocky-9, rhel-8, rhel-9,
// almalinux-8, almalinux-9, centos-stream-8, centos-stream-9 (dnf). `auto`
// stands for "whatever the node's os-release says" until connect resolves it
// (os_release.h); a plan is only ever built for resolved nodes.
struct OsRelease {
  std::string id;       // "ubuntu", "rocky", "centos-stream", ... or "auto"
  std::string version;  // "22.04", "9"; empty for auto
  OsFamily family = OsFamily::kDebian;
  [[nodiscard]] std::string Name() const { return version.empty() ? id : id + "-" + version; }
  [[nodiscard]] bool IsAuto() const { return id == "auto"; }
  static OsRelease Auto() { return {"auto", "", OsFamily::kDebian}; }
};
std::optional<OsRelease> ParseOs(const std::string& text);
const std::vector<std::string>& KnownOsNames();
// For a release that is end of life (centos-7, centos-8): why gpuctl refuses
// it and what replaces it; nullopt for any other name.
std::optional<std::string> EndOfLifeAdvice(const std::string& name);

// How to reach a node. Cluster-wide defaults, overridden field by field per node.
struct SshSettings {
  std::string user = "root";
  int port = 22;
  std::string identity_file;  // empty: agent, then ~/.ssh/id_ed25519, ~/.ssh/id_rsa
  bool become = false;        // run commands through sudo
  // Name of an environment variable that holds the sudo password; the value
  // itself never appears in an inventory, a plan file or a log.
  std::string become_password_env;
  std::string jump_host;    // [user@]host[:port], empty for none
  std::string known_hosts;  // empty: ~/.ssh/known_hosts
  int connect_timeout_s = 10;
  int command_timeout_s = 1800;
};

struct GpuExpectation {
  std::string model;  // as nvidia-smi names it, e.g. "NVIDIA A100-SXM4-80GB"
  int count = 0;
  // The GPUs sit on NVSwitch (HGX/DGX boards): CUDA fails with error 802
  // until NVIDIA Fabric Manager of the driver's exact version runs. Unset:
  // the admin did not say (validate warns for 8-GPU SXM models).
  std::optional<bool> nvswitch;
  // hardware.gpus.mig: per GPU index, its MIG instances where they go (an
  // empty list: MIG off on that GPU). nullopt: the inventory does not say,
  // and gpuctl leaves MIG as it is.
  std::optional<std::vector<std::vector<MigPlacement>>> mig;
  // Some GPU runs MIG instances.
  [[nodiscard]] bool RunsMig() const;
};

struct IbPortExpectation {
  std::string device;  // "mlx5_0"
  int port = 1;
  int rate_gbps = 0;  // 0: any rate
};

struct Hardware {
  std::optional<GpuExpectation> gpus;
  std::vector<IbPortExpectation> ib;
};

struct Node {
  std::string name;
  std::string address;               // management address (what SSH connects to)
  std::string ib_address;            // optional compute/IB address for /etc/hosts
  OsRelease os = OsRelease::Auto();  // resolved at connect when auto
  std::set<Role> roles;
  SshSettings ssh;  // defaults merged with this node's overrides
  Hardware hardware;
  // Kernel parameters the inventory sets for this node (docs/inventory.md#sysctl):
  // the top-level `sysctl`, then node_defaults', then the node's own, key by
  // key; os.sysctl writes them over the catalog's defaults. Keys in sysctl.d's
  // dotted form where they have one ("vm.swappiness").
  std::map<std::string, std::string> sysctl;
  // The interface NCCL's sockets use (NCCL_SOCKET_IFNAME): the node's own
  // `compute_interface`, else node_defaults', else network.compute_interface;
  // empty: the one holding ib_address, else the management address.
  std::string compute_interface;
  SourceLocation where;  // where the node was declared, for later diagnostics
  // `state: absent`: the node is leaving the cluster. It is in no cluster-wide
  // value (hosts lines, Slurm's node list, known hosts, monitoring targets),
  // holds no role for WithRole/RoleHolders/Master, and only the catalog's
  // removal steps (`state: absent`) apply to it: drained, reset, forgotten
  // by the control plane (docs/day2.md, "Removing a node").
  bool absent = false;
  // Not from the inventory: chosen by `gpuctl reset` (absent too, so it
  // leaves the cluster as a removed node does); the reset steps
  // (`state: reset`) apply to it.
  bool reset = false;
  // Not from the inventory: the node's SSH host key ("type base64") as
  // gpuctl's own connection verified it, set when a run plans (empty
  // before, or for a node not reached). The master's known_hosts step
  // compares with it instead of scanning every node.
  std::string host_key;

  [[nodiscard]] bool Has(Role role) const { return roles.count(role) > 0; }
  [[nodiscard]] int GpuCount() const { return hardware.gpus ? hardware.gpus->count : 0; }
  // Runs NCCL and carries its traffic: GPUs or RDMA ports (ib.nccl-env, the
  // network buffers of os.sysctl).
  [[nodiscard]] bool OnFabric() const { return GpuCount() > 0 || !hardware.ib.empty(); }
  // The inventory sets a MIG layout, even one that turns MIG off.
  [[nodiscard]] bool SetsMig() const { return hardware.gpus && hardware.gpus->mig.has_value(); }
  // Some GPU of the node runs MIG instances.
  [[nodiscard]] bool RunsMig() const { return hardware.gpus && hardware.gpus->RunsMig(); }
  [[nodiscard]] bool OnNvswitch() const {
    return hardware.gpus && hardware.gpus->nvswitch.value_or(false);
  }
};

// Versions of the stack. Defaults are a consistent, current set.
struct Versions {
  // versions.driver (first named driver_branch): a branch ("550") or an exact
  // release ("550.54.14"); the steps get both halves (params.cpp).
  std::string driver_branch = "550";
  std::string cuda = "12.4";
  std::string cudnn = "9.1";
  std::string nccl = "2.21";
  std::string ofed = "24.01";
  std::string container_toolkit = "1.15";
  std::string kubernetes = "1.30";
  std::string cni = "flannel";
  std::string gpu_operator = "v24.3.0";
  std::string slurm;  // a series ("23.02") or release; empty: the OS's own Slurm
};

struct NfsExport {
  std::string path;     // directory on the server
  std::string clients;  // who may mount it; default: the cluster subnet
};

struct NfsMount {
  std::string export_path;  // server-side path
  std::string mount_point;  // where clients mount it
  std::string options = "rw,hard,nfsvers=4.1";
};

struct Nfs {
  std::string server;  // node name; empty: the first storage node, else the master
  std::vector<NfsExport> exports;
  std::vector<NfsMount> mounts;  // mounted on every non-server node
};

// How nodes find each other by name: gpuctl's block in every /etc/hosts, or
// the site's DNS (a large cluster's usual choice: no file with a line per
// node on every node).
enum class NameResolution { kHostsFile, kDns };

struct Network {
  std::string subnet;  // management subnet (CIDR), used to limit NFS exports
  NameResolution name_resolution = NameResolution::kHostsFile;
  std::string pod_cidr = "10.244.0.0/16";
  std::string service_cidr = "10.96.0.0/12";
  // The master's upstream time servers (host names or addresses); empty:
  // pool.ntp.org, which an air-gapped site cannot reach.
  std::vector<std::string> ntp_servers;
  // Every node's compute interface unless the node names its own (Node).
  std::string compute_interface;
};

struct SlurmPartition {
  std::string name;
  std::vector<std::string> nodes;  // node names; empty: every worker
  bool is_default = false;
  // slurm.conf's MaxTime and DefaultTime as written (SlurmTimeProblem);
  // empty: MaxTime=INFINITE, and no DefaultTime (jobs get MaxTime).
  std::string max_time;
  std::string default_time;
};

struct Slurm {
  std::string cluster_name;  // default: the inventory's cluster name
  std::vector<SlurmPartition> partitions;
  std::string munge_key_env;  // env var holding the munge key; empty: generated on the master
};

struct Policy {
  bool disable_firewall = false;  // default: open the needed ports
  bool disable_selinux = false;   // default: permissive is not forced
  bool docker = false;            // install Docker beside containerd
  // Nothing may come from the internet: validate names every source still at
  // an internet default (mirrors, repositories).
  bool air_gapped = false;
  // Hold the kernel packages on nodes whose GPU or IB drivers are kernel
  // modules built for one kernel (os.kernel-hold): a kernel that routine or
  // unattended upgrades bring in would boot without them.
  bool hold_kernel = true;
};

// Where an air-gapped site keeps what gpuctl would otherwise fetch from the
// internet (docs/inventory.md#mirrors). Every value is validated by kind.
struct Mirrors {
  // URL, or absolute path on the master; empty: flannel's release on GitHub.
  std::string cni_manifest;
  // Chart repository URL, or a chart archive (.tgz) URL or absolute path on
  // the master; empty: NVIDIA's NGC repository.
  std::string gpu_operator_chart;
  // Registry (nvcr.io, registry.k8s.io, docker.io, quay.io, ghcr.io) ->
  // mirror endpoint URL; "*" in the file expands to all five.
  std::map<std::string, std::string> registries;
};

// A package repository's site overrides (`repositories.<name>`, see
// repositories.h and docs/repositories.md); empty fields keep the upstream
// default. Each value is validated by kind.
struct RepositoryOverride {
  std::string url;          // mirror base URL replacing the upstream base
  std::string key;          // key URL or absolute path on the node
  std::string fingerprint;  // pinned key, 40 upper-case hex digits
};

// Who brings the InfiniBand fabric up. A fabric without a managed switch has
// no subnet manager: until one runs, every port stays Initializing and no
// RDMA traffic flows. These nodes then run OpenSM (ib.subnet-manager), the
// standby at a lower priority, taking over when the first stops. Empty: the
// switches run the subnet manager.
struct Fabric {
  std::string subnet_manager;          // node name
  std::string subnet_manager_standby;  // node name; empty: none
};

// OpenSM's priority (0-15; the highest answering one is master) on the
// inventory's subnet manager and on its standby.
inline constexpr int kSubnetManagerPriority = 15;
inline constexpr int kStandbySubnetManagerPriority = 14;

// The registries gpuctl can point at a mirror, in the order docs list them.
const std::vector<std::string>& MirrorableRegistries();

// Thresholds `check --deep` compares its measurements with; 0: report only.
struct Validation {
  int nccl_min_busbw_gbps = 0;  // all_reduce_perf bus bandwidth across nodes, GB/s
  int ib_min_bw_gbps = 0;       // ib_send_bw between a pair of nodes, Gb/s
  // The CUDA image the GPU pod and `docker run --gpus` start (an air-gapped
  // site names its own registry's copy).
  std::string cuda_image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04";
};

struct Inventory {
  std::string path;  // file it was read from
  std::string cluster;
  SshSettings ssh;  // cluster-wide defaults (already merged into each node)
  Orchestrator orchestrator = Orchestrator::kKubernetes;
  Versions versions;
  Network network;
  std::optional<Nfs> nfs;
  std::optional<Slurm> slurm;
  Fabric fabric;
  Policy policy;
  Mirrors mirrors;
  std::map<std::string, RepositoryOverride> repositories;  // by repository name
  Validation validation;
  // The top-level `sysctl` (already merged into each node's, under its own).
  std::map<std::string, std::string> sysctl;
  std::vector<Node> nodes;  // in file order
  // Not from the file: `gpuctl reset --packages` (condition reset_packages).
  bool reset_packages = false;

  // Any node, leaving ones (Node::absent) included.
  [[nodiscard]] const Node* Find(const std::string& name) const;
  // The nodes that stay: everything below skips the leaving ones.
  // Scans every node: a run that asks per item keeps RoleHolders() instead.
  [[nodiscard]] std::vector<const Node*> WithRole(Role role) const;
  // Every role's holders (WithRole for each), in one pass.
  [[nodiscard]] std::map<Role, std::vector<const Node*>> RoleHolders() const;
  // The first master; nullptr if none (a loaded inventory has exactly one).
  [[nodiscard]] const Node* Master() const;
  // The node serving NFS: nfs.server, else the first storage node, else the
  // master; nullptr without an nfs block.
  [[nodiscard]] const Node* NfsServer() const;
  // OpenSM's priority on `node` (kSubnetManagerPriority, ...); 0: it runs none.
  [[nodiscard]] int SubnetManagerPriority(const Node& node) const;
  // Whether some node is leaving (state: absent).
  [[nodiscard]] bool HasLeavingNodes() const;
};

// Reads and validates an inventory. Problems go to `diagnostics`, each with
// file:line:column; returns nullopt if any is an error. Validation covers
// syntax, unknown keys (with a "did you mean" hint), types, duplicate names or
// addresses, missing master, roles with no node, unknown OS, and a CUDA version
// the driver branch cannot run.
std::optional<Inventory> LoadInventory(const std::string& path, Diagnostics& diagnostics);
// Same, from text in memory (tests); `path` is only used in messages.
std::optional<Inventory> ParseInventory(const std::string& text, const std::string& path,
                                        Diagnostics& diagnostics);

}  // namespace gpuctl
