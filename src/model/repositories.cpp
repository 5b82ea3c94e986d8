// The vendor repositories gpuctl adds, their upstream layouts and pinned keys
// (docs/repositories.md names where each fact comes from), and their
// resolution for one node: mirror base, paths for the node's release, key.
#include "gpuctl/model/repositories.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace gpuctl {

namespace {

// Facts from the vendors' install guides; sources in docs/repositories.md.
std::vector<RepositoryLayout> MakeTable() {
  return {
      {
          .name = "cuda",
          .what = "CUDA, cuDNN, NCCL, DCGM, nccl-tests; the driver on dnf",
          .upstream = "https://developer.download.nvidia.com/compute/cuda/repos",
          .apt_path = "{ubuntu}/x86_64/",
          .apt_suites = "/",
          .apt_components = "",
          .apt_key = "{ubuntu}/x86_64/3bf863cc.pub",
          .dnf_path = "{rhel}/x86_64/",
          .dnf_key = "{rhel}/x86_64/D42D0685.pub",
          .dnf_signed_metadata = true,
          .fingerprints = {{"apt", "EB693B3035CD5710E231E123A4B469963BF863CC"},
                           {"dnf", "610C7B14E068A878070DA4E99CD0A493D42D0685"}},
      },
      {
          .name = "container-toolkit",
          .what = "the NVIDIA container toolkit",
          .upstream = "https://nvidia.github.io/libnvidia-container",
          .apt_path = "stable/deb/amd64/",
          .apt_suites = "/",
          .apt_components = "",
          .apt_key = "gpgkey",
          .dnf_path = "stable/rpm/x86_64/",
          .dnf_key = "gpgkey",
          .dnf_signed_metadata = true,
          .fingerprints = {{"apt", "C95B321B61E88C1809C4F759DDCAE044F796ECB0"},
                           {"dnf", "C95B321B61E88C1809C4F759DDCAE044F796ECB0"}},
      },
      {
          .name = "kubernetes",
          .what = "kubeadm, kubelet, kubectl (pkgs.k8s.io, one repository per minor)",
          .upstream = "https://pkgs.k8s.io/core:/stable:",
          .apt_path = "{k8s}/deb/",
          .apt_suites = "/",
          .apt_components = "",
          .apt_key = "{k8s}/deb/Release.key",
          .dnf_path = "{k8s}/rpm/",
          .dnf_key = "{k8s}/rpm/repodata/repomd.xml.key",
          .dnf_signed_metadata = true,
          .fingerprints = {{"apt", "DE15B14486CD377B9E876E1A234654DA9A296436"},
                           {"dnf", "DE15B14486CD377B9E876E1A234654DA9A296436"}},
      },
      {
          .name = "docker",
          .what = "docker-ce; containerd.io (containerd on dnf)",
          .upstream = "https://download.docker.com/linux",
          .apt_path = "{distro}",
          .apt_suites = "{codename}",
          .apt_components = "stable",
          .apt_key = "{distro}/gpg",
          .dnf_path = "centos/{major}/x86_64/stable/",
          .dnf_key = "centos/gpg",
          .dnf_signed_metadata = false,
          .fingerprints = {{"apt", "9DC858229FC7DD38854AE2D88D81803C0EBFCD88"},
                           {"dnf", "060A61C51B558A7F742B77AAC52FEB6B621E9F35"}},
      },
      {
          .name = "ofed",
          .what = "MLNX OFED (mlnx-ofed-all), perftest",
          .upstream = "https://linux.mellanox.com/public/repo/mlnx_ofed",
          .apt_path = "latest-{ofed}/{osver}/amd64/",
          .apt_suites = "/",
          .apt_components = "",
          .apt_key = "https://www.mellanox.com/downloads/ofed/RPM-GPG-KEY-Mellanox",
          .dnf_path = "latest-{ofed}/rhel@VERSION_ID@/x86_64/",
          .dnf_key = "https://www.mellanox.com/downloads/ofed/RPM-GPG-KEY-Mellanox",
          .dnf_signed_metadata = false,
          // No full fingerprint of RPM-GPG-KEY-Mellanox is published where gpuctl
          // could check it (its packages name the key ID C5ED83E26224C050 only):
          // the inventory pins it (docs/repositories.md#ofed).
          .fingerprints = {},
      },
      {
          .name = "epel",
          .what = "Slurm and munge, helm, dkms for the NVIDIA driver (dnf only)",
          .upstream = "https://dl.fedoraproject.org/pub/epel",
          .apt_path = "",
          .apt_suites = "",
          .apt_components = "",
          .apt_key = "",
          .dnf_path = "{major}/Everything/x86_64/",
          .dnf_key = "RPM-GPG-KEY-EPEL-{major}",
          .dnf_signed_metadata = false,
          .fingerprints = {{"dnf8", "94E279EB8D8F25B21810ADF121EA45AB2F86D6A1"},
                           {"dnf9", "FF8AD1344597106ECE813B918A3872BF3228467C"}},
      },
      {
          .name = "helm",
          .what = "helm (apt only; dnf nodes take it from EPEL)",
          // Helm's apt repository moved from baltocdn.com to Buildkite in 2025.
          .upstream = "https://packages.buildkite.com/helm-linux/helm-debian",
          .apt_path = "any/",
          .apt_suites = "any",
          .apt_components = "main",
          .apt_key = "gpgkey",
          .dnf_path = "",
          .dnf_key = "",
          .dnf_signed_metadata = false,
          .fingerprints = {{"apt", "DDF78C3E6EBB2D2CC223C95C62BA89D07698DBC6"}},
      },
  };
}

std::string Codename(const OsRelease& os) {
  static const std::map<std::string, std::string> kNames = {{"ubuntu-20.04", "focal"},
                                                            {"ubuntu-22.04", "jammy"},
                                                            {"ubuntu-24.04", "noble"},
                                                            {"debian-12", "bookworm"}};
  auto it = kNames.find(os.Name());
  return it == kNames.end() ? "" : it->second;
}

// The first two dot-separated parts: "1.30.2" -> "1.30", "24.01-0.3.3.1" -> "24.01".
std::string MajorMinor(const std::string& version) {
  std::string out;
  int dots = 0;
  for (char c : version) {
    if (c == '.' && ++dots == 2) break;
    if (c == '-' || c == '+') break;
    out += c;
  }
  return out;
}

std::string Fill(std::string text, const Inventory& inv, const OsRelease& os) {
  const std::string major = os.version.substr(0, os.version.find('.'));
  const std::string nodot = [&] {
    std::string v = os.version;
    v.erase(std::remove(v.begin(), v.end(), '.'), v.end());
    return v;
  }();
  const std::vector<std::pair<std::string, std::string>> values = {
      {"{ubuntu}", fmt::format("{}{}", os.id, nodot)},
      {"{rhel}", fmt::format("rhel{}", major)},
      {"{osver}", fmt::format("{}{}", os.id, os.version)},
      {"{codename}", Codename(os)},
      {"{distro}", os.id},
      {"{major}", major},
      {"{k8s}", fmt::format("v{}", MajorMinor(inv.versions.kubernetes))},
      {"{ofed}", MajorMinor(inv.versions.ofed)},
  };
  for (const auto& [placeholder, value] : values) {
    for (std::size_t at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at + value.size())) {
      text.replace(at, placeholder.size(), value);
    }
  }
  return text;
}

bool IsAbsoluteUrl(const std::string& text) {
  return text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0;
}

std::string Join(const std::string& base, const std::string& path) {
  if (path.empty()) return base;
  if (!base.empty() && base.back() == '/') return base + path;
  return base + "/" + path;
}

// Where the key is for `base`: upstream's own, or below a mirror: the same
// path relative to the base, or for a key upstream keeps elsewhere, its file
// name at the mirror's base.
std::string KeyLocation(const std::string& key, const std::string& base, bool mirrored) {
  if (!IsAbsoluteUrl(key)) return Join(base, key);
  if (!mirrored) return key;
  return Join(base, key.substr(key.rfind('/') + 1));
}

bool ServesNode(const Node& node) { return node.Has(Role::kMaster) || node.Has(Role::kWorker); }

bool NeedsFor(const std::string& name, const Inventory& inv, const Node& node, OsFamily family) {
  const bool rhel = family == OsFamily::kRhel;
  const bool kubernetes = inv.orchestrator == Orchestrator::kKubernetes;
  if (!ServesNode(node)) return false;
  if (name == "cuda" || name == "container-toolkit") return node.GpuCount() > 0;
  if (name == "kubernetes") return kubernetes;
  // containerd on dnf is Docker's containerd.io (containers.containerd).
  if (name == "docker") return inv.policy.docker || rhel;
  if (name == "ofed") return !node.hardware.ib.empty();
  // EPEL: Slurm and munge, helm on the master, and dkms, which NVIDIA's
  // DKMS driver (kmod-nvidia-latest-dkms) requires on a GPU node.
  if (name == "epel") {
    return rhel && (inv.orchestrator == Orchestrator::kSlurm ||
                    (kubernetes && node.Has(Role::kMaster)) || node.GpuCount() > 0);
  }
  if (name == "helm") return !rhel && kubernetes && node.Has(Role::kMaster);
  return false;
}

}  // namespace

const std::vector<RepositoryLayout>& KnownRepositories() {
  static const std::vector<RepositoryLayout> kTable = MakeTable();
  return kTable;
}

const std::vector<std::string>& RepositoryNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& r : KnownRepositories()) names.push_back(r.name);
    return names;
  }();
  return kNames;
}

const RepositoryLayout* FindRepository(const std::string& name) {
  const auto& table = KnownRepositories();
  auto it = std::find_if(table.begin(), table.end(),
                         [&](const RepositoryLayout& r) { return r.name == name; });
  return it == table.end() ? nullptr : &*it;
}

std::optional<std::string> NormalizeFingerprint(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (out.size() != 40) return std::nullopt;
  return out;
}

std::string ResolvedRepository::Describe() const {
  std::string text = fmt::format("name={}\n", name);
  if (family == OsFamily::kDebian) {
    text += fmt::format("type=deb\nuri={}\nsuites={}\ncomponents={}\n", uri, suites, components);
  } else {
    text += fmt::format("type=rpm\nbaseurl={}\nrepo_gpgcheck={}\n", baseurl, repo_gpgcheck ? 1 : 0);
  }
  text += fmt::format("key={}\nfingerprint={}", key, fingerprint);
  return text;
}

std::optional<ResolvedRepository> ResolveRepository(const std::string& name,
                                                    const Inventory& inventory, const Node& node) {
  const RepositoryLayout* layout = FindRepository(name);
  if (layout == nullptr || node.os.IsAuto()) return std::nullopt;
  const OsRelease& os = node.os;
  const bool apt = os.family == OsFamily::kDebian;
  if ((apt ? layout->apt_path : layout->dnf_path).empty()) return std::nullopt;

  ResolvedRepository r;
  r.name = name;
  r.family = os.family;
  RepositoryOverride site;
  if (auto it = inventory.repositories.find(name); it != inventory.repositories.end()) {
    site = it->second;
  }
  r.mirrored = !site.url.empty();
  std::string base = r.mirrored ? site.url : layout->upstream;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const std::string path = Fill(apt ? layout->apt_path : layout->dnf_path, inventory, os);
  if (apt) {
    r.uri = Join(base, path);
    r.suites = Fill(layout->apt_suites, inventory, os);
    r.components = layout->apt_components;
  } else {
    r.baseurl = Join(base, path);
    r.repo_gpgcheck = layout->dnf_signed_metadata;
  }
  r.key = !site.key.empty()
              ? site.key
              : KeyLocation(Fill(apt ? layout->apt_key : layout->dnf_key, inventory, os), base,
                            r.mirrored);
  if (!site.fingerprint.empty()) {
    r.fingerprint = site.fingerprint;
  } else {
    const std::string major = os.version.substr(0, os.version.find('.'));
    const std::vector<std::string> keys =
        apt ? std::vector<std::string>{"apt"} : std::vector<std::string>{"dnf" + major, "dnf"};
    for (const std::string& k : keys) {
      if (auto it = layout->fingerprints.find(k); it != layout->fingerprints.end()) {
        r.fingerprint = it->second;
        break;
      }
    }
  }
  return r;
}

bool NeedsRepository(const std::string& name, const Inventory& inventory, const Node& node) {
  if (node.os.IsAuto()) {
    return NeedsFor(name, inventory, node, OsFamily::kDebian) ||
           NeedsFor(name, inventory, node, OsFamily::kRhel);
  }
  return NeedsFor(name, inventory, node, node.os.family);
}

}  // namespace gpuctl
