// The inventory's `mirrors:` block, and what policy.air_gapped asks of it.
//
// Every value here ends up in a script (exported, shell-quoted) and in a
// command line on the master (kubectl -f, helm repo add, helm install) or in
// a file containerd reads (hosts.toml). So each is checked by kind before it
// gets that far (value_kinds.h): URLs are http(s) with a host and only
// characters a URL needs; paths are absolute with no `..`; registries are the
// five gpuctl knows.
#include <algorithm>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "gpuctl/model/syntax.h"
#include "inventory_internal.h"

namespace gpuctl {

const std::vector<std::string>& MirrorableRegistries() {
  static const std::vector<std::string> kNames = {"nvcr.io", "registry.k8s.io", "docker.io",
                                                  "quay.io", "ghcr.io"};
  return kNames;
}

namespace detail {

namespace {

using yaml::MapReader;
using yaml::Scalar;

bool IsUrl(std::string_view text) {
  return text.rfind("http", 0) == 0 && text.find("://") != std::string_view::npos;
}

bool EndsWith(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

// A URL or an absolute path on the master; false when it was rejected.
bool UrlOrPath(yaml::Source& source, MapReader& m, std::string_view key, std::string& out) {
  auto v = m.String(key);
  if (!v) {
    return false;
  }
  // Never quote a rejected value whole: it may hold a line break or an
  // escape that would garble the message; the problem names the culprit.
  std::string problem = IsUrl(v->text) ? UrlProblem(v->text) : AbsolutePathProblem(v->text);
  if (!IsUrl(v->text) && (v->text.empty() || v->text.front() != '/')) {
    problem = "expected an http(s) URL or an absolute path on the master";
  }
  if (!problem.empty()) {
    source.Error(v->where, fmt::format("invalid mirrors.{}: {}", key, problem));
    return false;
  }
  out = v->text;
  return true;
}

}  // namespace

void ReadMirrors(yaml::Source& source, MapReader& m, Inventory& inventory, InventoryMarks& marks) {
  (void)marks;
  Mirrors& mirrors = inventory.mirrors;
  UrlOrPath(source, m, "cni_manifest", mirrors.cni_manifest);
  if (UrlOrPath(source, m, "gpu_operator_chart", mirrors.gpu_operator_chart) &&
      !IsUrl(mirrors.gpu_operator_chart) && !EndsWith(mirrors.gpu_operator_chart, ".tgz")) {
    source.Error(m.ValueWhere("gpu_operator_chart"),
                 "invalid mirrors.gpu_operator_chart: a path on the master must be a chart "
                 "archive (.tgz, as `helm package` makes it)");
    mirrors.gpu_operator_chart.clear();
  }
  std::vector<std::string> keys = MirrorableRegistries();
  keys.emplace_back("*");
  auto registries = m.Map("registries", keys);
  if (!registries) {
    return;
  }
  std::string all;
  for (const std::string& name : keys) {
    auto v = registries->String(name);
    if (!v) {
      continue;
    }
    if (const std::string problem = UrlProblem(v->text); !problem.empty()) {
      source.Error(v->where, fmt::format("invalid mirror for registry {}: {}", name, problem));
      continue;
    }
    if (name == "*") {
      all = v->text;
    } else {
      mirrors.registries[name] = v->text;
    }
  }
  // "*": every registry not named on its own line.
  if (!all.empty()) {
    for (const std::string& name : MirrorableRegistries()) {
      mirrors.registries.try_emplace(name, all);
    }
  }
}

void CheckAirGappedMirrors(yaml::Source& source, const Inventory& inventory,
                           const InventoryMarks& marks) {
  if (!inventory.policy.air_gapped || inventory.orchestrator != Orchestrator::kKubernetes) {
    // Without Kubernetes only Docker pulls images, and only when asked to.
    if (inventory.policy.air_gapped && inventory.policy.docker &&
        inventory.mirrors.registries.count("docker.io") == 0) {
      source.Error(marks.air_gapped,
                   "policy.air_gapped: Docker pulls images from docker.io; name a mirror in "
                   "mirrors.registries (docker.io or \"*\")");
    }
    return;
  }
  const Mirrors& mirrors = inventory.mirrors;
  const bool gpus = std::any_of(inventory.nodes.begin(), inventory.nodes.end(), [](const Node& n) {
    return (n.Has(Role::kMaster) || n.Has(Role::kWorker)) && n.GpuCount() > 0;
  });
  if (mirrors.cni_manifest.empty()) {
    source.Error(marks.air_gapped,
                 "policy.air_gapped: the CNI manifest would come from GitHub (flannel's or "
                 "Calico's release); set mirrors.cni_manifest to a URL or a path on the master");
  }
  if (gpus && mirrors.gpu_operator_chart.empty()) {
    source.Error(marks.air_gapped,
                 "policy.air_gapped: the GPU Operator chart would come from NVIDIA's NGC "
                 "repository; set mirrors.gpu_operator_chart to a chart repository URL or a "
                 "chart archive (.tgz)");
  }
  // What the cluster pulls: the control plane and pause images, flannel's
  // images, the GPU Operator's images, Docker's.
  std::vector<std::pair<std::string, std::string>> needed = {
      {"registry.k8s.io", "the control plane's images (kubeadm)"},
      {"docker.io", "flannel's images"}};
  if (gpus) {
    needed.emplace_back("nvcr.io", "the GPU Operator's images");
  }
  for (const auto& [registry, what] : needed) {
    if (mirrors.registries.count(registry) == 0) {
      source.Error(marks.air_gapped,
                   fmt::format("policy.air_gapped: {} come from {}; name a mirror in "
                               "mirrors.registries ({} or \"*\")",
                               what, registry, registry));
    }
  }
}

}  // namespace detail
}  // namespace gpuctl
