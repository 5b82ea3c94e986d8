// Drain: how a node that is a member of a running cluster is taken out of
// service before gpuctl disrupts it, and put back afterwards.
//
// A step is disruptive when its change needs a reboot (`reboot: true`: a
// driver swapped under running CUDA jobs) or restarts the node's runtime
// (`restarts: [containerd]`: every pod's runtime goes away for a moment).
// Before such a change on a member node, the executor runs the catalog's
// drain for the inventory's orchestrator (kubectl cordon and drain, or Slurm's
// DRAIN and a wait for the node's jobs), and after the node's verification is
// green, its resume (uncordon, RESUME). Like steps, drains are data: a
// playbook's top-level `drain:` block holds the scripts, so code never knows
// kubectl or scontrol.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpuctl/model/diagnostic.h"
#include "gpuctl/model/inventory.h"

namespace gpuctl {

// What a step's change restarts on its node, as bits (a plan holds one per
// item, so it stays a byte). Only runtimes whose restart disturbs running
// work are named: a slurmd restart leaves its jobs running, so it is not one.
enum RestartBits : std::uint8_t {
  kRestartsNothing = 0,
  kRestartsContainerd = 1U << 0U,
  kRestartsDocker = 1U << 1U,
  kRestartsKubelet = 1U << 2U,
};

// The names a playbook's `restarts:` uses, in bit order.
const std::vector<std::string>& RestartNames();
// "containerd", "containerd, kubelet"; "" for none.
std::string DescribeRestarts(std::uint8_t restarts);
// The bit for a name, or 0 when it is not one.
std::uint8_t ParseRestart(std::string_view name);

enum class StepCondition;

struct Drain {
  std::string description;
  // Cluster-wide conditions (kubernetes, slurm): the drain applies to a run
  // whose inventory meets them all.
  std::vector<StepCondition> when;
  // Runs on the first inventory node holding this role (the control plane,
  // the Slurm controller), over a connection of its own.
  Role on = Role::kMaster;
  // Each gets GPUCTL_DRAIN_NODE (the node's name in the cluster),
  // GPUCTL_DRAIN_TIMEOUT (seconds the drain may take) and
  // GPUCTL_DRAIN_REASON (what a person reading the cluster sees).
  std::string member;  // exit 0: a member of the running cluster; 1: not (yet)
  std::string drain;   // cordon and empty the node; fails if it cannot in time
  std::string resume;  // put it back in service
  std::string file;    // playbook it came from
  SourceLocation where;

  // Whether it applies to `node` (its `when` holds there).
  [[nodiscard]] bool AppliesTo(const Node& node, const Inventory& inventory) const;
};

// The environment variables a drain's scripts read.
inline constexpr std::string_view kDrainNodeVariable = "GPUCTL_DRAIN_NODE";
inline constexpr std::string_view kDrainTimeoutVariable = "GPUCTL_DRAIN_TIMEOUT";
inline constexpr std::string_view kDrainReasonVariable = "GPUCTL_DRAIN_REASON";

}  // namespace gpuctl
