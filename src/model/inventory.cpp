#include "gpuctl/model/inventory.h"
#include "gpuctl/util/text.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "gpuctl/model/yaml_source.h"
#include "gpuctl/util/input_file.h"
#include "inventory_internal.h"

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
  return "unknown";
}

std::string ToString(OsFamily family) { return family == OsFamily::kDebian ? "debian" : "rhel"; }

std::string ToString(Orchestrator orchestrator) {
  switch (orchestrator) {
    case Orchestrator::kKubernetes:
      return "kubernetes";
    case Orchestrator::kSlurm:
      return "slurm";
    case Orchestrator::kNone:
      return "none";
  }
  return "unknown";
}

std::optional<Role> ParseRole(const std::string& text) {
  for (Role role : {Role::kMaster, Role::kWorker, Role::kStorage}) {
    if (text == ToString(role)) {
      return role;
    }
  }
  return std::nullopt;
}

namespace {

// The releases whose package names and repositories the playbooks know.
const std::vector<OsRelease>& KnownReleases() {
  static const std::vector<OsRelease> kReleases = {
      {"ubuntu", "20.04", OsFamily::kDebian},  {"ubuntu", "22.04", OsFamily::kDebian},
      {"ubuntu", "24.04", OsFamily::kDebian},  {"debian", "12", OsFamily::kDebian},
      {"rocky", "8", OsFamily::kRhel},         {"rocky", "9", OsFamily::kRhel},
      {"rhel", "8", OsFamily::kRhel},          {"rhel", "9", OsFamily::kRhel},
      {"almalinux", "8", OsFamily::kRhel},     {"almalinux", "9", OsFamily::kRhel},
      {"centos-stream", "8", OsFamily::kRhel}, {"centos-stream", "9", OsFamily::kRhel},
  };
  return kReleases;
}

}  // namespace

std::optional<OsRelease> ParseOs(const std::string& text) {
  for (const auto& release : KnownReleases()) {
    if (release.Name() == text) {
      return release;
    }
  }
  return std::nullopt;
}

const std::vector<std::string>& KnownOsNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& release : KnownReleases()) {
      names.push_back(release.Name());
    }
    return names;
  }();
  return kNames;
}

std::optional<std::string> EndOfLifeAdvice(const std::string& name) {
  // CentOS Linux ended with 8 (2021-12-31) and 7 (2024-06-30): no updates,
  // and NVIDIA's and Kubernetes' repositories no longer build for them.
  if (name == "centos-8") {
    return std::string(
        "centos-8 is end of life (CentOS Linux 8 ended on 2021-12-31); its successors are "
        "rocky-8 or almalinux-8 (the same release, still maintained), or centos-stream-9");
  }
  if (name == "centos-7") {
    return std::string(
        "centos-7 is end of life (CentOS Linux 7 ended on 2024-06-30); move the node to "
        "rocky-9 or almalinux-9 (or rocky-8/almalinux-8), or centos-stream-9");
  }
  return std::nullopt;
}

bool GpuExpectation::RunsMig() const {
  return mig && std::any_of(mig->begin(), mig->end(), [](const auto& gpu) { return !gpu.empty(); });
}

const Node* Inventory::Find(const std::string& name) const {
  auto it = std::find_if(nodes.begin(), nodes.end(), [&](const Node& n) { return n.name == name; });
  return it == nodes.end() ? nullptr : &*it;
}

std::vector<const Node*> Inventory::WithRole(Role role) const {
  std::vector<const Node*> out;
  for (const auto& node : nodes) {
    if (!node.absent && node.Has(role)) {
      out.push_back(&node);
    }
  }
  return out;
}

std::map<Role, std::vector<const Node*>> Inventory::RoleHolders() const {
  std::map<Role, std::vector<const Node*>> holders;
  for (const auto& node : nodes) {
    if (node.absent) {
      continue;
    }
    for (Role role : node.roles) {
      holders[role].push_back(&node);
    }
  }
  return holders;
}

// The first holder, without listing the others: asked once per node and
// step, a list of every holder made planning quadratic.
const Node* Inventory::Master() const {
  auto it = std::find_if(nodes.begin(), nodes.end(),
                         [](const Node& n) { return !n.absent && n.Has(Role::kMaster); });
  return it == nodes.end() ? nullptr : &*it;
}

const Node* Inventory::NfsServer() const {
  if (!nfs) {
    return nullptr;
  }
  if (!nfs->server.empty()) {
    return Find(nfs->server);
  }
  auto storage = std::find_if(nodes.begin(), nodes.end(),
                              [](const Node& n) { return !n.absent && n.Has(Role::kStorage); });
  return storage == nodes.end() ? Master() : &*storage;
}

int Inventory::SubnetManagerPriority(const Node& node) const {
  if (node.absent) {
    return 0;
  }
  if (node.name == fabric.subnet_manager) {
    return kSubnetManagerPriority;
  }
  if (!fabric.subnet_manager.empty() && node.name == fabric.subnet_manager_standby) {
    return kStandbySubnetManagerPriority;
  }
  return 0;
}

bool Inventory::HasLeavingNodes() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.absent; });
}

namespace detail {

std::optional<std::string> SecretKeyAdvice(const std::string& key,
                                           const std::vector<std::string>& allowed) {
  std::string lower = key;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto ends_with = [&](std::string_view suffix) {
    return lower.size() >= suffix.size() &&
           lower.compare(lower.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("_env")) {
    return std::nullopt;
  }
  constexpr std::array<std::string_view, 4> kSecretWords = {"password", "passwd", "token",
                                                            "secret"};
  const bool secret = lower == "key" || ends_with("_key") ||
                      std::any_of(kSecretWords.begin(), kSecretWords.end(),
                                  [&](auto word) { return lower.find(word) != std::string::npos; });
  if (!secret) {
    return std::nullopt;
  }
  std::vector<std::string> env_keys;
  std::copy_if(allowed.begin(), allowed.end(), std::back_inserter(env_keys),
               [](const std::string& k) { return k.size() > 4 && k.ends_with("_env"); });
  for (auto& k : env_keys) {
    k = fmt::format("'{}'", k);
  }
  const std::string prefix = fmt::format(
      "'{}' would put a secret in the inventory; keep it in an environment "
      "variable and name the variable with ",
      key);
  if (std::find(allowed.begin(), allowed.end(), key + "_env") != allowed.end()) {
    return fmt::format("{}'{}_env'", prefix, key);
  }
  if (!env_keys.empty()) {
    return prefix + Join(env_keys, " or ");
  }
  return prefix + "a *_env key (ssh.become_password_env, slurm.munge_key_env)";
}

}  // namespace detail

std::optional<Inventory> ParseInventory(const std::string& text, const std::string& path,
                                        Diagnostics& diagnostics) {
  Diagnostics found;
  yaml::Source source(path, found);
  source.SetKeyAdvisor(detail::SecretKeyAdvice);
  std::optional<Inventory> inventory;
  if (auto root = source.Parse(text)) {
    if (root->IsNull()) {
      source.Error({path, 1, 1}, "empty inventory: expected a mapping with 'cluster' and 'nodes'");
    } else {
      inventory.emplace();
      inventory->path = path;
      detail::InventoryMarks marks;
      detail::ReadInventory(source, *root, *inventory, marks);
      detail::CheckInventory(source, *inventory, marks);
    }
  }
  yaml::AppendInOrder(diagnostics, found);
  if (found.HasErrors()) {
    return std::nullopt;
  }
  return inventory;
}

std::optional<Inventory> LoadInventory(const std::string& path, Diagnostics& diagnostics) {
  auto text = yaml::ReadFile(path, kMaxInventoryBytes, diagnostics);
  if (!text) {
    return std::nullopt;
  }
  return ParseInventory(*text, path, diagnostics);
}

}  // namespace gpuctl
