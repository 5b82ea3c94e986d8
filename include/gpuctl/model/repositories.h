// Package repositories gpuctl adds to a node (steps repos.*, playbooks/12-repos.yaml;
// docs/repositories.md).
//
// Each known repository has an upstream base URL and, below it, a path per OS
// release laid out as its vendor publishes it. A site mirror copies that layout
// below its own base, so `repositories.<name>.url` replaces only the base. Keys
// are pinned by fingerprint: a key whose fingerprint differs is refused.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuctl/model/inventory.h"

namespace gpuctl {

// One vendor repository as published upstream. Paths are relative to
// `upstream` and may hold placeholders filled per node:
//   {ubuntu}   ubuntu2204, debian12 (CUDA's OS directory names)
//   {rhel}     rhel8, rhel9 (for any dnf release of that major)
//   {osver}    ubuntu22.04, debian12 (Mellanox's directory names)
//   {codename} jammy, noble, focal, bookworm
//   {distro}   ubuntu, debian (Docker's directories)
//   {major}    8, 9
//   {k8s}      v1.30 (versions.kubernetes, major.minor)
//   {ofed}     24.01 (versions.ofed, major.minor)
// and @VERSION_ID@, which stays in the description and is replaced on the node
// by its /etc/os-release VERSION_ID (Mellanox names RHEL directories by minor
// release, rhel9.4, which an inventory's `rocky-9` does not say).
struct RepositoryLayout {
  std::string name;      // "cuda"
  std::string what;      // what gpuctl installs from it (docs, messages)
  std::string upstream;  // base URL
  // apt, deb822: URIs (relative path), Suites, Components ("" for a flat
  // repository, whose suite is "/"); empty apt_path: no apt repository.
  std::string apt_path;
  std::string apt_suites;
  std::string apt_components;
  std::string apt_key;  // key location, relative to upstream or an absolute URL
  // dnf: baseurl (relative path); empty: no dnf repository.
  std::string dnf_path;
  std::string dnf_key;
  // Whether upstream signs its dnf metadata (repodata/repomd.xml.asc), so
  // repo_gpgcheck=1 can be asked for; packages are always checked (gpgcheck=1).
  bool dnf_signed_metadata = false;
  // Pinned primary-key fingerprints: "apt", "dnf", or "dnf<major>" (EPEL has
  // one key per release); none for a repository whose fingerprint the
  // inventory must give.
  std::map<std::string, std::string> fingerprints;
};

// The known repositories, in the order docs list them.
const std::vector<RepositoryLayout>& KnownRepositories();
const std::vector<std::string>& RepositoryNames();
const RepositoryLayout* FindRepository(const std::string& name);

// What a step's scripts need to add one repository to one node.
struct ResolvedRepository {
  std::string name;
  OsFamily family = OsFamily::kDebian;
  std::string uri;         // apt: URIs
  std::string suites;      // apt: Suites ("/" for a flat repository)
  std::string components;  // apt: Components (empty for a flat repository)
  std::string baseurl;     // dnf
  bool repo_gpgcheck = false;
  std::string key;          // key URL, or an absolute path on the node
  std::string fingerprint;  // 40 upper-case hex digits; empty: none pinned
  bool mirrored = false;    // from the inventory's url, not upstream

  // The parameter a repos.* step reads (GPUCTL_REPO_<NAME>): one key=value a
  // line (name, type, uri/suites/components or baseurl/repo_gpgcheck, key,
  // fingerprint), docs/playbooks.md#repositories.
  [[nodiscard]] std::string Describe() const;
};

// The repository `name` as `node` gets it (the inventory's overrides applied);
// nullopt when it has none for the node's OS (EPEL on apt, Helm's on dnf) or
// the node's OS is not resolved yet. It depends on the inventory and the
// node's OS only (ParameterTable keeps one answer per OS).
std::optional<ResolvedRepository> ResolveRepository(const std::string& name,
                                                    const Inventory& inventory, const Node& node);

// Whether `node` installs packages from repository `name`: the same rule as
// the step repos.<name>'s roles, os and when (a unit test holds them
// together). A node whose OS is `auto` counts as either family.
bool NeedsRepository(const std::string& name, const Inventory& inventory, const Node& node);

// "EB693B30 35CD..." -> "EB693B3035CD...": spaces removed, upper case; nullopt
// unless exactly 40 hex digits remain.
std::optional<std::string> NormalizeFingerprint(const std::string& text);

}  // namespace gpuctl
