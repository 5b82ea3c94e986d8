// Catalog and Step: what gpuctl knows how to do, kept as data in playbooks/*.yaml.
//
// A Step is a read-only probe ("is this already true on the node?"), a change
// per OS family, and a verification probe. Code never special-cases a step id:
// adding a step to the product means adding YAML.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpuctl/model/diagnostic.h"
#include "gpuctl/model/drain.h"
#include "gpuctl/model/inventory.h"

namespace gpuctl {

// What a probe script's exit status means. Anything else is a probe failure.
inline constexpr int kProbeSatisfied = 0;    // already done
inline constexpr int kProbeNeedsChange = 1;  // apply would change something
inline constexpr int kProbeUnknown = 3;      // cannot tell until an earlier step runs
// Not right, and the step's change would not make it right (7 of 8 GPUs
// visible, an IB port down): an admin must act. Also what a probe that passes
// becomes when the step's verification then fails (prober.h, VerdictScript).
inline constexpr int kProbeAttention = 4;
// Needs a change that cannot succeed as the inventory asks: the version it
// names is not in the node's repositories, a Fabric Manager for the driver
// release is missing (docs/playbooks.md#preflight). `plan` exits 1 and
// `apply` refuses before anything changes on any node.
inline constexpr int kProbeRefused = 5;

// A value a step's scripts read from another node when the step runs: the
// master's join command, its munge key, its SSH public key. Fetched at the
// moment it is needed, so nothing made on one node is ever stored by gpuctl.
struct StepInput {
  std::string name;           // exported to the step's scripts as GPUCTL_<NAME>
  Role from = Role::kMaster;  // runs on the first inventory node holding this role
  std::string script;         // read-only unless `secret`: it also runs in plan and check
  // A secret is fetched only right before the change (never for a probe, a
  // plan or check), redacted from everything shown or written, never stored.
  bool secret = false;
  // Runs on every node holding `from`; the value is each node's output, every
  // line prefixed with the node's name and a space (a node's hardware, say).
  bool each = false;
  SourceLocation where;
};

// When a step applies beyond role and OS family: a condition on the inventory.
enum class StepCondition {
  kAlways,
  kHasGpus,          // the node's hardware declares GPUs
  kHasIb,            // the node's hardware declares IB ports
  kNfs,              // the inventory has an nfs block
  kNfsServer,        // this node is the NFS server
  kNfsClient,        // this node mounts NFS and is not the server
  kKubernetes,       // orchestrator: kubernetes
  kSlurm,            // orchestrator: slurm
  kDocker,           // policy.docker
  kRegistryMirrors,  // mirrors.registries names at least one registry
  kDockerRepo,       // Docker's repository supplies packages: policy.docker, or dnf (containerd.io)
  kEpelRepo,         // EPEL supplies packages: dnf with Slurm, or a dnf Kubernetes master (helm)
  kHostsFile,        // network.name_resolution: hosts (gpuctl keeps /etc/hosts)
  kNvswitch,         // the node's GPUs sit on NVSwitch (hardware.gpus.nvswitch: true)
  kKernelModules,    // the node runs out-of-tree kernel modules gpuctl installs (GPUs or IB)
  kHoldKernel,       // kernel_modules, and policy.hold_kernel (the default)
  kLeavingNodes,     // some node of the inventory has state: absent
  kResetPackages,    // `gpuctl reset --packages`: the packages gpuctl installed go too
  kSubnetManager,    // this node runs OpenSM (fabric.subnet_manager or its standby)
  kMig,              // the node's inventory sets a MIG layout (hardware.gpus.mig), even MIG off
  kFabric,           // the node has GPUs or RDMA ports: it runs NCCL and registers memory
};

// The name a playbook's `when` uses for a condition ("has_gpus").
std::string_view ToString(StepCondition condition);

// Whether `condition` holds for `node` of `inventory`.
bool ConditionHolds(StepCondition condition, const Node& node, const Inventory& inventory);

// A dependency on another step: on the same node, or on every node holding
// `role` (cross-node, e.g. a worker's join waits for the master's init).
struct StepDependency {
  std::string step;
  std::optional<Role> on_role;  // empty: same node
  SourceLocation where;
  // The dependency does not hold on a node where this condition holds: every
  // IB node's ib.ofed waits for the subnet managers' OpenSM, except on those
  // nodes themselves, whose OpenSM needs their OFED first.
  std::optional<StepCondition> unless = std::nullopt;
};

struct Step {
  std::string id;  // "gpu.driver"
  std::string description;
  std::set<Role> roles;         // applies to nodes holding any of these
  std::set<OsFamily> families;  // empty: every family
  std::vector<StepCondition> when;
  std::vector<StepDependency> depends;
  // Shell the step's scripts share (`common:`): the loader has already put it
  // at the head of probe, every change and verify, so what runs, and every
  // digest, is as if it were written out in each. Kept to show it once.
  std::string common;
  std::string probe;                         // read-only shell script
  std::map<OsFamily, std::string> change;    // per family; "any" fills both
  std::string verify;                        // read-only; defaults to probe
  bool reboot = false;                       // node must reboot after the change
  std::uint8_t restarts = kRestartsNothing;  // RestartBits: runtimes the change restarts
  // A validation only `check --deep` runs (an NCCL or IB bandwidth test, a
  // GPU pod): never planned or applied, no change; its probe prints figures.
  bool deep = false;
  // `state: absent`: a removal step (a node's kubeadm reset, its slurmd
  // stopped). It applies only to nodes the inventory marks absent, and every
  // other step only to nodes that stay, so a leaving node's plan is its
  // removal and nothing else.
  bool leaving = false;
  // `state: reset`: a step of `gpuctl reset` (gpuctl's files restored, its
  // holds lifted). It applies only to the nodes a reset run chose
  // (Node::reset), which also leave the cluster by the removal steps.
  bool reset = false;
  // Inventory parameters the scripts read, each exported as GPUCTL_<NAME>
  // (params.h lists the names); unknown names are load errors.
  std::vector<std::string> params;
  // Parameters only the change scripts are sent, not the probe or the
  // verification: a value as long as the cluster is large (every node's
  // hosts line) that the probe compares by a digest parameter instead, so a
  // plan does not ship it to every node. Part of the item's digest all the
  // same.
  std::vector<std::string> change_params;
  // Inventory secrets the scripts read (params.h: KnownSecrets), exported as
  // GPUCTL_<NAME> at run time only: never in a plan, its digest or a journal.
  std::vector<std::string> secrets;
  std::vector<StepInput> inputs;
  std::string file;  // playbook it came from
  SourceLocation where;

  [[nodiscard]] bool AppliesTo(const Node& node, const Inventory& inventory) const;
  [[nodiscard]] const std::string* ChangeFor(OsFamily family) const;
};

class Catalog {
 public:
  // Loads every playbooks/*.yaml in `dir` (sorted by name), and the prelude
  // from `dir`/prelude.sh when there is one. Checks syntax, unknown keys,
  // types, duplicate ids, unknown dependency ids and cycles.
  static std::optional<Catalog> Load(const std::string& dir, Diagnostics& diagnostics);
  // One playbook's text (tests).
  static std::optional<Catalog> Parse(const std::string& text, const std::string& path,
                                      Diagnostics& diagnostics);

  // A catalog from steps built in code (unit tests); no validation.
  static Catalog FromSteps(std::vector<Step> steps, std::vector<Drain> drains = {}) {
    Catalog c;
    c.steps_ = std::move(steps);
    c.drains_ = std::move(drains);
    c.IndexSteps();
    return c;
  }

  [[nodiscard]] const std::vector<Step>& steps() const { return steps_; }
  // Playbooks' `drain:` blocks (drain.h), in file order.
  [[nodiscard]] const std::vector<Drain>& drains() const { return drains_; }
  // The drain that applies to `node`, or nullptr.
  [[nodiscard]] const Drain* DrainFor(const Node& node, const Inventory& inventory) const;
  // Shell functions prepended to every script (playbooks/prelude.sh).
  [[nodiscard]] const std::string& prelude() const { return prelude_; }
  [[nodiscard]] const Step* Find(const std::string& id) const;
  // The steps `patterns` name, with everything they depend on (Terraform's
  // -target): a pattern is a step id ("k8s.join") or a group, the part
  // before the dot ("k8s"). Catalog order is kept. Sets `error` and returns
  // an empty catalog when a pattern matches nothing.
  [[nodiscard]] Catalog Select(const std::vector<std::string>& patterns, std::string& error) const;
  // Content hash of the whole catalog: a saved plan records it.
  [[nodiscard]] std::string Digest() const;

 private:
  static void CheckGraph(const std::vector<Step>& steps, Diagnostics& diagnostics);
  // Fills by_id_ once steps_ is complete.
  void IndexSteps();
  std::vector<Step> steps_;  // file order, then order within a file
  // Position of each step in steps_, by id: Find runs for every item a large
  // apply walks, several times each (a scan of the ids was a tenth of it).
  // Positions, not pointers, so a copied catalog's index stays true.
  std::unordered_map<std::string, std::size_t> by_id_;
  std::vector<Drain> drains_;
  std::string prelude_;
};

// Directory holding the catalog: $GPUCTL_PLAYBOOKS, else the installed share
// dir, else the source tree's playbooks/.
std::string DefaultPlaybookDir();

}  // namespace gpuctl
