// Shared by the lab tests of day-2 changes (docs/day2.md): inventories
// changed as an admin changes them (a node added, a version moved), and
// what a plan and a run did to each node, so a test can say that the nodes
// already there were touched only where the change needs them.
#pragma once

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "support/lab_support.h"

namespace gpuctl::test {

// node -> steps
using StepsByNode = std::map<std::string, std::set<std::string>>;

// Writes `inventory` without the node `name` to `out` (`absent`: with the
// node kept and marked `state: absent`, as an admin removes one), and
// without the Slurm partitions that named only it; partitions that named it
// beside others lose it. Its subnet-manager duty goes to the standby (else
// to another IB node), as an admin moves it before the node leaves. python3-yaml, as the lab itself
// reads and writes YAML.
inline Result WriteWithoutNode(const std::string& inventory, const std::string& out,
                               const std::string& name, bool absent = false) {
  static constexpr const char* kScript = R"PY(
import sys, yaml
source, target, name, mode = sys.argv[1:5]
with open(source) as f:
    doc = yaml.safe_load(f)
if mode == "absent":
    for n in doc["nodes"]:
        if n["name"] == name:
            n["state"] = "absent"
else:
    doc["nodes"] = [n for n in doc["nodes"] if n["name"] != name]
slurm = doc.get("slurm") or {}
kept = []
for p in slurm.get("partitions", []):
    if "nodes" in p and name in p["nodes"]:
        p["nodes"] = [n for n in p["nodes"] if n != name]
        if not p["nodes"]:
            continue
    kept.append(p)
if "partitions" in slurm:
    slurm["partitions"] = kept
fabric = doc.get("fabric") or {}
if fabric.get("subnet_manager_standby") == name:
    del fabric["subnet_manager_standby"]
if fabric.get("subnet_manager") == name:
    # The standby, else the first other IB node that stays.
    heir = fabric.pop("subnet_manager_standby", None) or next(
        (n["name"] for n in doc["nodes"] if n["name"] != name and n.get("state") != "absent"
         and (n.get("hardware") or {}).get("ib")), None)
    if heir:
        fabric["subnet_manager"] = heir
    else:
        del fabric["subnet_manager"]
with open(target, "w") as f:
    yaml.safe_dump(doc, f, sort_keys=False)
)PY";
  return Shell("python3 -c " + Quote(kScript) + " " + Quote(inventory) + " " + Quote(out) + " " +
               Quote(name) + " " + (absent ? "absent" : "drop") + " 2>&1");
}

// Writes `inventory` with versions.KEY set to `value` (quoted, as a version
// is written) to `out`.
inline Result WriteWithVersion(const std::string& inventory, const std::string& out,
                               const std::string& key, const std::string& value) {
  static constexpr const char* kScript = R"PY(
import sys, yaml
source, target, key, value = sys.argv[1:5]
with open(source) as f:
    doc = yaml.safe_load(f)
doc.setdefault("versions", {})[key] = value
with open(target, "w") as f:
    yaml.safe_dump(doc, f, sort_keys=False, default_style=None)
)PY";
  return Shell("python3 -c " + Quote(kScript) + " " + Quote(inventory) + " " + Quote(out) + " " +
               Quote(key) + " " + Quote(value) + " 2>&1");
}

// The driver release every GPU of `node` reports (one line when they agree).
inline std::string LoadedDriver(const Lab& lab, const std::string& node) {
  return Trim(
      lab.Ssh(node, "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u").out);
}

// The packages of driver branch `branch` (digits) installed on `node`, on
// either family: apt's nvidia-driver-550 and its kin, rpm's 550.x releases.
// Empty once a move to another branch left nothing behind.
inline std::string PackagesOfBranch(const Lab& lab, const std::string& node,
                                    const std::string& branch) {
  return Trim(lab.Ssh(node, "{ dpkg -l 2>/dev/null | awk '$1 ~ /^.i/ && $2 ~ /-" + branch +
                                "$/ { print $2 }'; rpm -qa 2>/dev/null | grep -F -- '-" + branch +
                                ".'; } | sort")
                  .out);
}

// What `gpuctl plan` (NO_COLOR) says it would do: "~" (will change), "?"
// (known after apply) and "!" (apply cannot fix) lines, each as "~ step",
// under the node whose heading they follow.
inline StepsByNode PlannedSteps(const std::string& plan_out) {
  static const std::regex kHeading(R"(^(\S+)  \S+  \S+  \[.*\]$)");
  static const std::regex kItem(R"(^  ([~?!]) (\S+) )");
  StepsByNode planned;
  std::string node;
  std::istringstream in(plan_out);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_match(line, m, kHeading)) {
      node = m[1].str();
      planned[node];
    } else if (!node.empty() && std::regex_search(line, m, kItem)) {
      planned[node].insert(m[1].str() + " " + m[2].str());
    }
  }
  return planned;
}

// The steps whose change a run started on each node, from its journal.
inline StepsByNode ChangedSteps(const std::string& run_dir) {
  StepsByNode changed;
  std::ifstream in(fs::path(run_dir) / "journal.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.value("event", "") == "start" &&
        e.value("activity", "") == "change") {
      changed[e.value("node", "")].insert(e.value("step", ""));
    }
  }
  return changed;
}

// The nodes a run rebooted or drained, from its journal's notes.
inline std::set<std::string> DisruptedNodes(const std::string& run_dir) {
  std::set<std::string> nodes;
  std::ifstream in(fs::path(run_dir) / "journal.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded() || e.value("event", "") != "note") continue;
    const std::string message = e.value("message", "");
    if (message == "rebooting" || message == "drained") nodes.insert(e.value("node", ""));
  }
  return nodes;
}

}  // namespace gpuctl::test
