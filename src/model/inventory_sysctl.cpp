// The inventory's `sysctl:` maps (top level, node_defaults, a node): kernel
// parameters written over the catalog's defaults by os.sysctl into
// /etc/sysctl.d/90-gpuctl.conf.
//
// A key and a value each become part of a line of that file, and of a shell
// variable the step's scripts split, so each is checked by kind
// (value_kinds.h) at its own file:line:column. A value Kubernetes cannot
// work with, for a key gpuctl sets for it, is refused here with the reason,
// not found out when kubeadm's preflight or the pod network fails.
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "inventory_internal.h"

namespace gpuctl::detail {

namespace {

// sysctl.d(5) takes `net/ipv4/ip_forward` and `net.ipv4.ip_forward` for the
// same parameter: one spelling, so a node's value replaces the cluster's and
// the catalog's whichever way each was written. A '/'-separated key with a
// dot inside a part (a VLAN interface, eth0.100) has no dotted form and is
// kept as it is.
std::string Canonical(const std::string& key) {
  std::string out = key;
  if (out.find('/') != std::string::npos && out.find('.') == std::string::npos) {
    for (char& c : out) {
      c = c == '/' ? '.' : c;
    }
  }
  return out;
}

// What a Kubernetes node needs of a key gpuctl sets for it; "" when `value`
// is fine (or the key is not one of them). Error or warning, and why.
struct Need {
  bool error = false;
  std::string why;
};
Need KubernetesNeed(const std::string& key, const std::string& value) {
  if (value == "1") {
    return {};
  }
  if (key == "net.ipv4.ip_forward") {
    return {true,
            "Kubernetes needs net.ipv4.ip_forward = 1: pod traffic between nodes is routed "
            "through each node (kubeadm's preflight refuses a node without it)"};
  }
  if (key == "net.bridge.bridge-nf-call-iptables") {
    return {true,
            "Kubernetes needs net.bridge.bridge-nf-call-iptables = 1: without it bridged pod "
            "traffic bypasses kube-proxy's Service rules (kubeadm's preflight refuses the node)"};
  }
  if (key == "net.bridge.bridge-nf-call-ip6tables") {
    return {false,
            "with net.bridge.bridge-nf-call-ip6tables not 1, bridged IPv6 pod traffic bypasses "
            "kube-proxy's Service rules"};
  }
  return {};
}

}  // namespace

void ReadSysctl(yaml::Source& source, const YAML::Node& map, const SourceLocation& where,
                Orchestrator orchestrator, std::map<std::string, std::string>& out) {
  if (map.IsNull()) {
    return;  // `sysctl:` with nothing under it: nothing to add
  }
  if (!map.IsMap()) {
    source.Error(
        where, fmt::format("expected a mapping of kernel parameters, got {}", yaml::Describe(map)));
    return;
  }
  std::map<std::string, int> seen;  // canonical key -> the line it was first written on
  for (const auto& pair : map) {
    const SourceLocation key_where = source.Where(pair.first);
    if (!pair.first.IsScalar()) {
      source.Error(key_where, fmt::format("expected a kernel parameter name, got {}",
                                          yaml::Describe(pair.first)));
      continue;
    }
    const yaml::Scalar key{pair.first.Scalar(), key_where};
    if (const std::string problem = SysctlKeyProblem(key.text); !problem.empty()) {
      source.Error(key.where, fmt::format("invalid kernel parameter name{}: {}",
                                          ShownValue(key.text), problem));
      continue;
    }
    const std::string name = Canonical(key.text);
    if (auto [first, fresh] = seen.emplace(name, key.where.line); !fresh) {
      source.Error(key.where, fmt::format("duplicate kernel parameter {} (first at line {})", name,
                                          first->second));
      continue;
    }
    const SourceLocation value_where = source.Where(pair.second);
    if (!pair.second.IsScalar()) {
      source.Error(
          value_where.line > 0 ? value_where : key.where,
          fmt::format("expected a value for {}, got {}", name, yaml::Describe(pair.second)));
      continue;
    }
    const yaml::Scalar value{pair.second.Scalar(), value_where};
    if (const std::string problem = SysctlValueProblem(value.text); !problem.empty()) {
      source.Error(value.where, fmt::format("invalid value{} for {}: {}", ShownValue(value.text),
                                            name, problem));
      continue;
    }
    if (orchestrator == Orchestrator::kKubernetes) {
      if (const Need need = KubernetesNeed(name, value.text); !need.why.empty()) {
        if (need.error) {
          source.Error(value.where, need.why);
          continue;
        }
        source.Warning(value.where, need.why);
      }
    }
    out[name] = value.text;
  }
}

}  // namespace gpuctl::detail
