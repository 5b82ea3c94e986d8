// The inventory's `repositories:` block, and what policy.air_gapped asks of it.
//
// A repository's url and key end up in a file apt or dnf reads and in a
// script's command line (curl, cp), so each is checked by kind here: URLs are
// http(s) with a host and only characters a URL needs; a key is such a URL or
// an absolute path on the node; a fingerprint is 40 hex digits.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "gpuctl/model/repositories.h"
#include "inventory_internal.h"

namespace gpuctl::detail {

namespace {

using yaml::MapReader;

bool ReadUrl(yaml::Source& source, MapReader& m, const std::string& name, std::string& out) {
  auto v = m.String("url");
  if (!v) return false;
  if (const std::string problem = UrlProblem(v->text); !problem.empty()) {
    // The problem names the bad character; the value itself may hold a line
    // break that would garble the message.
    source.Error(v->where, fmt::format("invalid repositories.{}.url: {}", name, problem));
    return false;
  }
  out = v->text;
  return true;
}

void ReadKey(yaml::Source& source, MapReader& m, const std::string& name, std::string& out) {
  auto v = m.String("key");
  if (!v) return;
  const bool url = v->text.rfind("http://", 0) == 0 || v->text.rfind("https://", 0) == 0;
  std::string problem = url ? UrlProblem(v->text) : AbsolutePathProblem(v->text);
  if (!url && !problem.empty() && (v->text.empty() || v->text.front() != '/')) {
    problem = "expected an http(s) URL or an absolute path on the node";
  }
  if (!problem.empty()) {
    source.Error(v->where, fmt::format("invalid repositories.{}.key: {}", name, problem));
    return;
  }
  out = v->text;
}

void ReadFingerprint(yaml::Source& source, MapReader& m, const std::string& name,
                     std::string& out) {
  auto v = m.String("fingerprint");
  if (!v) return;
  if (auto fpr = NormalizeFingerprint(v->text)) {
    out = *fpr;
    return;
  }
  source.Error(v->where, fmt::format("invalid repositories.{}.fingerprint: expected the key's "
                                     "full fingerprint, 40 hex digits (spaces allowed), as "
                                     "`gpg --show-keys` prints it",
                                     name));
}

}  // namespace

void ReadRepositories(yaml::Source& source, MapReader& m, Inventory& inventory) {
  for (const std::string& name : RepositoryNames()) {
    auto entry = m.Map(name, {"url", "key", "fingerprint"});
    if (!entry) continue;
    RepositoryOverride site;
    ReadUrl(source, *entry, name, site.url);
    ReadKey(source, *entry, name, site.key);
    ReadFingerprint(source, *entry, name, site.fingerprint);
    inventory.repositories[name] = site;
  }
}

void CheckAirGappedRepositories(yaml::Source& source, const Inventory& inventory,
                                const InventoryMarks& marks) {
  if (!inventory.policy.air_gapped) return;
  for (const RepositoryLayout& layout : KnownRepositories()) {
    auto it = inventory.repositories.find(layout.name);
    if (it != inventory.repositories.end() && !it->second.url.empty()) continue;
    std::vector<std::string> nodes;
    for (const Node& node : inventory.nodes) {
      if (NeedsRepository(layout.name, inventory, node)) nodes.push_back(node.name);
    }
    if (nodes.empty()) continue;
    source.Error(marks.air_gapped,
                 fmt::format("policy.air_gapped: package repository '{}' would come from {} "
                             "(for {}); set repositories.{}.url to the site's mirror",
                             layout.name, layout.upstream, Join(nodes), layout.name));
  }
}

}  // namespace gpuctl::detail
