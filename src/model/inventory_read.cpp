// Inventory, first pass: the schema. Each value is checked on its own here
// (type, range, syntax); anything that needs two keys waits for the checks.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "gpuctl/model/cuda_compat.h"
#include "gpuctl/model/node_range.h"
#include "gpuctl/model/repositories.h"
#include "gpuctl/model/syntax.h"
#include "gpuctl/util/input_file.h"
#include "inventory_internal.h"

namespace gpuctl::detail {

namespace {

using yaml::MapReader;
using yaml::Scalar;
using ValueKind = std::string (*)(std::string_view);

// Functions rather than globals: a throwing static initialiser could not be
// caught (cert-err58-cpp).
const std::vector<std::string>& TopKeys() {
  static const std::vector<std::string> kKeys = {
      "cluster", "ssh",          "orchestrator",  "versions",   "network",
      "nfs",     "slurm",        "policy",        "validation", "nodes",
      "mirrors", "repositories", "node_defaults", "sysctl",     "fabric"};
  return kKeys;
}
const std::vector<std::string>& SshKeys() {
  static const std::vector<std::string> kKeys = {
      "user",      "port",        "identity_file",   "become",         "become_password_env",
      "jump_host", "known_hosts", "connect_timeout", "command_timeout"};
  return kKeys;
}
const std::vector<std::string>& VersionKeys() {
  static const std::vector<std::string> kKeys = {
      "driver",     "driver_branch", "cuda",         "cudnn", "nccl", "ofed", "container_toolkit",
      "kubernetes", "cni",           "gpu_operator", "slurm"};
  return kKeys;
}
const std::vector<std::string>& NodeKeys() {
  static const std::vector<std::string> kKeys = {
      "name", "address",  "ib_address", "os",    "roles",
      "ssh",  "hardware", "sysctl",     "state", "compute_interface"};
  return kKeys;
}

// What node_defaults may set: any node key but those naming one node.
const std::vector<std::string>& DefaultKeys() {
  static const std::vector<std::string> kKeys = {"os",       "roles",  "ssh",
                                                 "hardware", "sysctl", "compute_interface"};
  return kKeys;
}

constexpr int kMaxPort = 65535;
constexpr int kMaxTimeout = 7 * 24 * 3600;

class Reader {
 public:
  Reader(yaml::Source& source, Inventory& inventory, InventoryMarks& marks)
      : source_(source), inv_(inventory), marks_(marks) {
    base_ = std::filesystem::absolute(std::filesystem::path(inventory.path)).parent_path();
  }

  void Top(const YAML::Node& root);

 private:
  void Ssh(MapReader& m, SshSettings& ssh);
  void VersionsBlock(MapReader& m);
  void NetworkBlock(MapReader& m);
  void NfsBlock(MapReader& m);
  void SlurmBlock(MapReader& m);
  void NodeItem(const YAML::Node& item);
  // The keys a node shares with node_defaults, read over what `node` holds
  // (a key present replaces; ssh and hardware key by key).
  void NodeFields(MapReader& m, Node& node);
  // One name or address of a node entry, or a range of them ("gpu[01-16]");
  // each checked by `kind`. Empty on error (reported).
  std::vector<std::string> Names(const Scalar& v, std::string_view what, ValueKind kind);
  void HardwareBlock(MapReader& m, Hardware& hardware);

  // A path as the admin meant it: ~ is their home, relative is next to the
  // inventory (not wherever gpuctl happens to be run from).
  std::string ResolvePath(const std::string& text) const;
  void EnvName(MapReader& m, std::string_view key, std::string& out);
  void Cidr(MapReader& m, std::string_view key, std::string& out);
  // An absolute path on a node; `what` names it in messages. `/` itself is
  // refused where it would be the whole file system (an export, a mount point).
  void AbsolutePath(MapReader& m, std::string_view key, std::string_view what, std::string& out,
                    bool root_ok);

  // Whether `v` is a value of `kind`; if not, reports "invalid <what>
  // ['value']: <problem>" at the value (the value only when printable, see
  // ShownValue).
  bool Valid(const Scalar& v, std::string_view what, ValueKind kind);
  // Reads `key` into `out` when it is a value of `kind` (an invalid value
  // leaves `out` as it was: later checks never see, or quote, it). Empty
  // text is taken as it is when `empty_ok`.
  void ReadKind(MapReader& m, std::string_view key, std::string_view what, ValueKind kind,
                std::string& out, bool empty_ok = false);

  yaml::Source& source_;
  Inventory& inv_;
  InventoryMarks& marks_;
  std::filesystem::path base_;
  Node defaults_;               // node_defaults, over the cluster-wide ssh settings
  bool default_roles_ = false;  // node_defaults sets roles: a node may leave them out
  // Where the hardware.gpus block a node takes was written (its own, else
  // node_defaults'), for the NVSwitch warning of the second pass.
  SourceLocation gpus_at_;
  SourceLocation defaults_gpus_at_;
};

bool Reader::Valid(const Scalar& v, std::string_view what, ValueKind kind) {
  const std::string problem = kind(v.text);
  if (problem.empty()) {
    return true;
  }
  source_.Error(v.where, fmt::format("invalid {}{}: {}", what, ShownValue(v.text), problem));
  return false;
}

void Reader::ReadKind(MapReader& m, std::string_view key, std::string_view what, ValueKind kind,
                      std::string& out, bool empty_ok) {
  auto v = m.String(key);
  if (!v) {
    return;
  }
  if ((empty_ok && v->text.empty()) || Valid(*v, what, kind)) {
    out = v->text;
  }
}

std::string Reader::ResolvePath(const std::string& text) const {
  if (text.empty()) {
    return text;
  }
  if (text == "~" || text.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return home != nullptr ? std::string(home) + text.substr(1) : text;
  }
  std::filesystem::path path(text);
  return path.is_absolute() ? text : (base_ / path).lexically_normal().string();
}

void Reader::EnvName(MapReader& m, std::string_view key, std::string& out) {
  auto v = m.String(key);
  if (!v) {
    return;
  }
  // Empty is allowed so that a node can drop a cluster-wide setting.
  if (!v->text.empty() && !EnvVarNameProblem(v->text).empty()) {
    // Never echo the value: someone who got this wrong may have pasted the
    // secret itself.
    source_.Error(v->where, fmt::format("'{}' must name an environment variable (letters, "
                                        "digits and '_'), not hold the secret itself",
                                        key));
    return;
  }
  out = v->text;
}

void Reader::Cidr(MapReader& m, std::string_view key, std::string& out) {
  auto v = m.String(key);
  if (!v) {
    return;
  }
  if (Valid(*v, "CIDR", CidrProblem)) {
    out = v->text;
  }
}

void Reader::AbsolutePath(MapReader& m, std::string_view key, std::string_view what,
                          std::string& out, bool root_ok) {
  auto v = m.String(key);
  if (!v || !Valid(*v, what, AbsolutePathProblem)) {
    return;
  }
  if (!root_ok && v->text.find_first_not_of('/') == std::string::npos) {
    source_.Error(v->where, fmt::format("invalid {} '/': the node's whole file system", what));
    return;
  }
  out = v->text;
}

void Reader::Top(const YAML::Node& root) {
  MapReader top(source_, root, TopKeys());
  if (!top.ok()) {
    return;
  }
  top.Require({"cluster", "nodes"});
  if (auto cluster = top.String("cluster")) {
    // It names gpuctl's state directory for the cluster: one safe component.
    if (cluster->text.empty()) {
      source_.Error(cluster->where, "expected a cluster name, got an empty string");
    } else if (Valid(*cluster, "cluster name", ClusterNameProblem)) {
      inv_.cluster = cluster->text;
    }
  }
  if (auto ssh = top.Map("ssh", SshKeys())) {
    Ssh(*ssh, inv_.ssh);
  }
  if (auto o = top.String("orchestrator")) {
    marks_.orchestrator = o->where;
    const std::vector<std::string> names = {"kubernetes", "slurm", "none"};
    if (o->text == "kubernetes") {
      inv_.orchestrator = Orchestrator::kKubernetes;
    } else if (o->text == "slurm") {
      inv_.orchestrator = Orchestrator::kSlurm;
    } else if (o->text == "none") {
      inv_.orchestrator = Orchestrator::kNone;
    } else {
      source_.Error(o->where, yaml::UnknownName("orchestrator", o->text, names));
    }
  }
  if (auto m = top.Map("versions", VersionKeys())) {
    VersionsBlock(*m);
  }
  if (auto m = top.Map("network", {"subnet", "pod_cidr", "service_cidr", "ntp_servers",
                                   "name_resolution", "compute_interface"})) {
    NetworkBlock(*m);
  }
  if (auto v = top.Value("sysctl")) {
    ReadSysctl(source_, *v, top.ValueWhere("sysctl"), inv_.orchestrator, inv_.sysctl);
  }
  if (auto m = top.Map("nfs", {"server", "exports", "mounts"})) {
    NfsBlock(*m);
  }
  if (auto m = top.Map("slurm", {"cluster_name", "partitions", "munge_key_env"})) {
    marks_.slurm = top.KeyWhere("slurm");
    SlurmBlock(*m);
  }
  if (auto m = top.Map("fabric", {"subnet_manager", "subnet_manager_standby"})) {
    ReadFabric(source_, *m, inv_, marks_);
  }
  if (auto m = top.Map("policy", {"disable_firewall", "disable_selinux", "docker", "air_gapped",
                                  "hold_kernel"})) {
    m->Read("disable_firewall", inv_.policy.disable_firewall);
    m->Read("disable_selinux", inv_.policy.disable_selinux);
    m->Read("docker", inv_.policy.docker);
    m->Read("air_gapped", inv_.policy.air_gapped);
    m->Read("hold_kernel", inv_.policy.hold_kernel);
    marks_.air_gapped = m->ValueWhere("air_gapped");
  }
  if (auto m = top.Map("mirrors", {"cni_manifest", "gpu_operator_chart", "registries"})) {
    ReadMirrors(source_, *m, inv_, marks_);
  }
  if (auto m = top.Map("repositories", RepositoryNames())) {
    ReadRepositories(source_, *m, inv_);
  }
  if (auto m = top.Map("validation", {"nccl_min_busbw_gbps", "ib_min_bw_gbps", "cuda_image"})) {
    m->Read("nccl_min_busbw_gbps", inv_.validation.nccl_min_busbw_gbps, 0, 100000);
    m->Read("ib_min_bw_gbps", inv_.validation.ib_min_bw_gbps, 0, 100000);
    ReadKind(*m, "cuda_image", "image reference", ImageReferenceProblem,
             inv_.validation.cuda_image);
  }
  // Nodes last: each starts from node_defaults over the cluster-wide ssh
  // settings read above, wherever those blocks sit in the file.
  defaults_.ssh = inv_.ssh;
  defaults_.sysctl = inv_.sysctl;
  defaults_.compute_interface = inv_.network.compute_interface;
  if (auto m = top.Map("node_defaults", DefaultKeys())) {
    NodeFields(*m, defaults_);
    defaults_gpus_at_ = gpus_at_;
    default_roles_ = m->Has("roles") && !defaults_.roles.empty();
  }
  if (auto nodes = top.List("nodes")) {
    if (nodes->size() > kMaxInventoryNodes) {
      // Not read further: checking each would cost time and memory for a
      // file that is refused anyway.
      source_.Error(top.KeyWhere("nodes"),
                    fmt::format("{} nodes; gpuctl reads at most {} in one inventory", nodes->size(),
                                kMaxInventoryNodes));
      return;
    }
    marks_.has_nodes = true;
    marks_.nodes = top.KeyWhere("nodes");
    for (const auto& item : *nodes) {
      NodeItem(item);
    }
  }
}

void Reader::Ssh(MapReader& m, SshSettings& ssh) {
  if (auto user = m.String("user")) {
    if (user->text.empty()) {
      source_.Error(user->where, "expected a user name, got an empty string");
    } else if (Valid(*user, "ssh user", UserNameProblem)) {
      ssh.user = user->text;
    }
  }
  m.Read("port", ssh.port, 1, kMaxPort);
  if (auto v = m.String("identity_file"); v && Valid(*v, "identity_file", LocalPathProblem)) {
    ssh.identity_file = ResolvePath(v->text);
  }
  m.Read("become", ssh.become);
  EnvName(m, "become_password_env", ssh.become_password_env);
  if (auto v = m.String("jump_host")) {
    if (!v->text.empty() && !IsJumpHost(v->text)) {
      source_.Error(v->where, fmt::format("invalid jump_host{}: expected [user@]host[:port]",
                                          ShownValue(v->text)));
    } else {
      ssh.jump_host = v->text;
    }
  }
  if (auto v = m.String("known_hosts"); v && Valid(*v, "known_hosts", LocalPathProblem)) {
    ssh.known_hosts = ResolvePath(v->text);
  }
  m.Read("connect_timeout", ssh.connect_timeout_s, 1, kMaxTimeout);
  m.Read("command_timeout", ssh.command_timeout_s, 1, kMaxTimeout);
}

void Reader::VersionsBlock(MapReader& m) {
  Versions& v = inv_.versions;
  // versions.driver, or its first name driver_branch: a branch ("550") or an
  // exact release ("550.54.14"). Kept as written even when invalid, so the
  // CUDA check below does not judge a default the admin did not ask for.
  for (const std::string_view key : {"driver_branch", "driver"}) {
    auto d = m.String(key);
    if (!d) continue;
    if (marks_.driver_branch.line > 0) {
      source_.Error(d->where,
                    "versions.driver and versions.driver_branch are one setting: keep "
                    "versions.driver");
      continue;
    }
    marks_.driver_branch = d->where;
    v.driver_branch = d->text;
    Valid(*d, key == "driver" ? "driver version" : "driver branch", DriverVersionProblem);
  }
  if (auto c = m.String("cuda")) {
    marks_.cuda = c->where;
    // An invalid one keeps the default: the CUDA/driver check quotes it.
    if (Valid(*c, "CUDA version", VersionProblem)) {
      v.cuda = c->text;
    }
  }
  // Package names and versions in scripts and repository paths.
  if (auto c = m.String("cudnn")) {
    marks_.cudnn = c->where;
    if (Valid(*c, "cuDNN version", VersionProblem)) {
      v.cudnn = c->text;
    }
  }
  ReadKind(m, "nccl", "NCCL version", VersionProblem, v.nccl);
  ReadKind(m, "ofed", "OFED version", VersionProblem, v.ofed);
  ReadKind(m, "container_toolkit", "container toolkit version", VersionProblem,
           v.container_toolkit);
  ReadKind(m, "kubernetes", "Kubernetes version", VersionProblem, v.kubernetes);
  ReadKind(m, "cni", "CNI", CniProblem, v.cni);
  ReadKind(m, "gpu_operator", "GPU Operator version", VersionProblem, v.gpu_operator);
  if (auto s = m.String("slurm")) {
    // Dotted numbers as Slurm numbers its releases: 23.02 or 23.02.7 (the
    // driver-version check is the same test, less the one-number form).
    if (!IsDriverVersion(s->text) || s->text.find('.') == std::string::npos) {
      source_.Error(s->where, fmt::format("invalid Slurm version{}: expected a series like "
                                          "'23.02' or a release like '23.02.7'",
                                          ShownValue(s->text)));
    } else {
      v.slurm = s->text;
    }
  }
}

void Reader::NetworkBlock(MapReader& m) {
  Cidr(m, "subnet", inv_.network.subnet);
  Cidr(m, "pod_cidr", inv_.network.pod_cidr);
  Cidr(m, "service_cidr", inv_.network.service_cidr);
  ReadKind(m, "compute_interface", "compute interface", InterfaceNameProblem,
           inv_.network.compute_interface);
  for (const Scalar& server : m.StringList("ntp_servers").value_or(std::vector<Scalar>{})) {
    if (Valid(server, "NTP server", AddressProblem)) {
      inv_.network.ntp_servers.push_back(server.text);
    }
  }
  if (auto r = m.String("name_resolution")) {
    if (r->text == "hosts") {
      inv_.network.name_resolution = NameResolution::kHostsFile;
    } else if (r->text == "dns") {
      inv_.network.name_resolution = NameResolution::kDns;
    } else {
      source_.Error(r->where, yaml::UnknownName("name resolution", r->text, {"hosts", "dns"}));
    }
  }
}

void Reader::NfsBlock(MapReader& m) {
  Nfs& nfs = inv_.nfs.emplace();
  if (auto server = m.String("server")) {
    marks_.nfs_server = server->where;
    if (Valid(*server, "nfs.server", HostNameProblem)) {
      nfs.server = server->text;
    }
  }
  for (const auto& item : m.List("exports").value_or(std::vector<YAML::Node>{})) {
    MapReader e(source_, item, {"path", "clients"});
    if (!e.ok()) {
      continue;
    }
    e.Require({"path"});
    NfsExport out;
    AbsolutePath(e, "path", "NFS export path", out.path, false);
    // Empty: the default (CheckNfs).
    ReadKind(e, "clients", "NFS clients", NfsClientProblem, out.clients, true);
    nfs.exports.push_back(out);
    marks_.exports_at.push_back(e.where());
  }
  for (const auto& item : m.List("mounts").value_or(std::vector<YAML::Node>{})) {
    MapReader e(source_, item, {"export", "path", "options"});
    if (!e.ok()) {
      continue;
    }
    e.Require({"export", "path"});
    NfsMount out;
    AbsolutePath(e, "export", "NFS mount export", out.export_path, false);
    AbsolutePath(e, "path", "NFS mount point", out.mount_point, false);
    ReadKind(e, "options", "NFS mount options", MountOptionsProblem, out.options);
    nfs.mounts.push_back(out);
    marks_.mount_exports_at.push_back(e.ValueWhere("export"));
  }
}

void Reader::SlurmBlock(MapReader& m) {
  Slurm& slurm = inv_.slurm.emplace();
  // Empty: the inventory's cluster name (CheckSlurm).
  ReadKind(m, "cluster_name", "Slurm cluster name", SlurmNameProblem, slurm.cluster_name, true);
  EnvName(m, "munge_key_env", slurm.munge_key_env);
  for (const auto& item : m.List("partitions").value_or(std::vector<YAML::Node>{})) {
    MapReader p(source_, item, {"name", "nodes", "default", "max_time", "default_time"});
    if (!p.ok()) {
      continue;
    }
    p.Require({"name"});
    SlurmPartition out;
    ReadKind(p, "name", "partition name", SlurmNameProblem, out.name);
    p.Read("default", out.is_default);
    ReadKind(p, "max_time", "partition max_time", SlurmTimeProblem, out.max_time);
    if (auto def = p.String("default_time");
        def && Valid(*def, "partition default_time", SlurmTimeProblem)) {
      out.default_time = def->text;
      // slurmctld drops a DefaultTime above MaxTime with only a log line.
      const long long max = out.max_time.empty() ? -1 : SlurmTimeMinutes(out.max_time);
      const long long wanted = SlurmTimeMinutes(def->text);
      if (max >= 0 && (wanted < 0 || wanted > max)) {
        source_.Error(def->where, fmt::format("partition '{}': default_time is above its "
                                              "max_time ({}), which Slurm would ignore",
                                              out.name, out.max_time));
      }
    }
    std::vector<SourceLocation> at;
    for (auto& n : p.StringList("nodes").value_or(std::vector<Scalar>{})) {
      if (Valid(n, "partition node", HostNameProblem)) {
        out.nodes.push_back(n.text);
        at.push_back(n.where);
      }
    }
    slurm.partitions.push_back(out);
    marks_.partitions_at.push_back(p.where());
    marks_.partition_nodes_at.push_back(std::move(at));
  }
}

std::vector<std::string> Reader::Names(const Scalar& v, std::string_view what, ValueKind kind) {
  std::vector<std::string> names;
  if (!IsRange(v.text)) {
    names.push_back(v.text);
  } else {
    std::string error;
    auto expanded = ExpandRange(v.text, error);
    if (!expanded) {
      source_.Error(v.where, fmt::format("invalid {} range {}", what, error));
      return {};
    }
    names = std::move(*expanded);
  }
  for (const auto& name : names) {
    // Each name of a range is checked as if it had been written alone (the
    // mark is the range's).
    if (const std::string problem = kind(name); !problem.empty()) {
      source_.Error(v.where, fmt::format("invalid {}{}: {}", what, ShownValue(name), problem));
      return {};
    }
  }
  return names;
}

void Reader::NodeFields(MapReader& m, Node& node) {
  if (auto os = m.String("os")) {
    if (os->text == "auto") {
      node.os = OsRelease::Auto();
    } else if (auto release = ParseOs(os->text)) {
      node.os = *release;
    } else if (auto advice = EndOfLifeAdvice(os->text)) {
      source_.Error(os->where, *advice);
    } else {
      std::vector<std::string> names = KnownOsNames();
      names.emplace_back("auto");
      source_.Error(os->where, yaml::UnknownName("OS", os->text, names));
    }
  }
  if (auto roles = m.StringList("roles")) {
    node.roles.clear();  // a node's own roles replace the defaults'
    const std::vector<std::string> names = {"master", "worker", "storage"};
    for (const auto& r : *roles) {
      if (auto role = ParseRole(r.text)) {
        node.roles.insert(*role);
      } else {
        source_.Error(r.where, yaml::UnknownName("role", r.text, names));
      }
    }
    if (roles->empty()) {
      source_.Error(m.ValueWhere("roles"),
                    "a node needs at least one role: master, worker or storage");
    }
  }
  if (auto ssh = m.Map("ssh", SshKeys())) {
    Ssh(*ssh, node.ssh);
  }
  // Key by key over the cluster's (and node_defaults') values.
  if (auto v = m.Value("sysctl")) {
    ReadSysctl(source_, *v, m.ValueWhere("sysctl"), inv_.orchestrator, node.sysctl);
  }
  ReadKind(m, "compute_interface", "compute interface", InterfaceNameProblem,
           node.compute_interface);
  if (auto hw = m.Map("hardware", {"gpus", "ib"})) {
    // `hardware: {}`: none, whatever node_defaults say (as gpuctl-lab up
    // --from reads it); otherwise key by key.
    if (auto value = m.Value("hardware"); value && value->size() == 0) {
      node.hardware = Hardware{};
    }
    HardwareBlock(*hw, node.hardware);
  }
}

void Reader::NodeItem(const YAML::Node& item) {
  MapReader m(source_, item, NodeKeys());
  if (!m.ok()) {
    return;
  }
  // `os` may be left out: the node's own os-release decides (os: auto);
  // `roles` too when node_defaults gives them.
  m.Require({"name", "address"});
  if (!default_roles_) {
    m.Require({"roles"});
  }
  Node node = defaults_;
  node.where = m.where();
  InventoryMarks::NodeMarks at;
  // It becomes a host name (/etc/hosts, hostnamectl, Kubernetes, Slurm).
  std::vector<std::string> names;
  if (auto name = m.String("name")) {
    at.name = name->where;
    names = Names(*name, "node name", HostNameProblem);
  }
  std::vector<std::string> addresses;
  std::vector<std::string> ib_addresses;
  using Field = std::tuple<std::string_view, std::vector<std::string>*, SourceLocation*>;
  for (const auto& [key, out, where] :
       std::array<Field, 2>{Field{"address", &addresses, &at.address},
                            Field{"ib_address", &ib_addresses, &at.ib_address}}) {
    auto v = m.String(key);
    if (!v) {
      continue;
    }
    *where = v->where;
    *out = Names(*v, "address", AddressProblem);
    if (out->empty()) {
      continue;
    }
    if (IsRange(v->text) && !names.empty() && out->size() != names.size()) {
      source_.Error(v->where, fmt::format("{} range {} has {} addresses, but the name range has "
                                          "{} names: each node needs one",
                                          key, v->text, out->size(), names.size()));
      out->clear();
    } else if (!IsRange(v->text) && names.size() > 1) {
      source_.Error(v->where, fmt::format("{} {} is one address for {} nodes ({} .. {}): write "
                                          "a range of the same count, such as 10.0.1.[11-26]",
                                          key, v->text, names.size(), names.front(), names.back()));
      out->clear();
    }
  }
  // Only a node itself can leave: node_defaults has no `state`.
  if (auto state = m.String("state")) {
    at.state = state->where;
    if (state->text == "absent") {
      node.absent = true;
    } else if (state->text != "present") {
      source_.Error(state->where, yaml::UnknownName("state", state->text, {"present", "absent"}));
    }
  }
  gpus_at_ = defaults_gpus_at_;
  NodeFields(m, node);
  at.gpus = gpus_at_;
  if (names.empty()) {
    names.emplace_back();  // the name was invalid (reported): one node, as before
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    Node one = node;
    one.name = names[i];
    if (i < addresses.size()) {
      one.address = addresses[i];
    }
    if (i < ib_addresses.size()) {
      one.ib_address = ib_addresses[i];
    }
    inv_.nodes.push_back(std::move(one));
    marks_.nodes_at.push_back(at);
  }
}

void Reader::HardwareBlock(MapReader& m, Hardware& hardware) {
  constexpr int kMaxGpus = 1024;
  constexpr int kMaxIbPort = 255;
  constexpr int kMaxRateGbps = 100000;
  if (auto gpus = m.Map("gpus", {"model", "count", "nvswitch", "mig"})) {
    gpus->Require({"model", "count"});
    GpuExpectation g;
    ReadKind(*gpus, "model", "GPU model", GpuModelProblem, g.model);
    gpus->Read("count", g.count, 1, kMaxGpus);
    g.nvswitch = gpus->Bool("nvswitch");
    if (gpus->Has("mig")) {
      ReadMig(source_, *gpus, g);
    }
    hardware.gpus = g;
    gpus_at_ = gpus->where();
  }
  if (m.Has("ib")) {
    hardware.ib.clear();  // a node's own ports replace node_defaults'
  }
  for (const auto& item : m.List("ib").value_or(std::vector<YAML::Node>{})) {
    MapReader p(source_, item, {"device", "port", "rate"});
    if (!p.ok()) {
      continue;
    }
    p.Require({"device"});
    IbPortExpectation port;
    ReadKind(p, "device", "IB device", IbDeviceProblem, port.device);
    p.Read("port", port.port, 1, kMaxIbPort);
    p.Read("rate", port.rate_gbps, 0, kMaxRateGbps);
    hardware.ib.push_back(port);
  }
}

}  // namespace

void ReadInventory(yaml::Source& source, const YAML::Node& root, Inventory& inventory,
                   InventoryMarks& marks) {
  Reader(source, inventory, marks).Top(root);
}

}  // namespace gpuctl::detail
