// `gpuctl reset`: an apply in which the chosen nodes leave the cluster as
// removed nodes do (state: absent) and then undo what gpuctl set up on them
// (the catalog's `state: reset` steps, reading the node's ledger). Plan,
// confirmation, execution and the journal are apply's (ApplyAction); this
// is what differs before the plan is built and after.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gpuctl/action/spec.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/run/phase.h"

namespace gpuctl {

// `gpuctl reset` on a spec loaded without a limit: the nodes `limit` and
// `exclude` choose (node_range.h; every node when both are empty) leave the
// cluster as removed nodes do and get the reset steps; `packages` adds the
// removal of what gpuctl installed. The other nodes are not limited: they
// make the changes the departure needs (the control plane forgets the
// nodes, slurm.conf and hosts lines drop them), and only those
// (ResetScope). Returns why it refuses, or "": a bad selection, or the
// master or the NFS server going while other nodes stay.
std::string PrepareReset(Spec& spec, const std::vector<std::string>& limit,
                         const std::vector<std::string>& exclude, bool packages);

// `inventory` as it was before PrepareReset marked `reset_nodes`.
Inventory WithoutResetMarks(Inventory inventory, const std::set<std::string>& reset_nodes);

// A reset that leaves some nodes: of theirs, only the items the departure
// changes (a digest unlike the same item's in `before`, the plan of the
// inventory without the reset's marks), and what those wait for.
Plan ResetScope(const Plan& plan, const Plan& before, const std::set<std::string>& reset_nodes);

// After the plan phase: ResetScope of the context's plan, `before` built
// from the context's inventory without the marks on `reset_nodes`. Does
// nothing outside a reset, or when it takes every node.
std::unique_ptr<Phase> MakeResetScopePhase(const std::set<std::string>& reset_nodes);

// Whether the reset takes every node: the cluster itself goes, so there is
// nothing to drain onto.
bool ResetsWholeCluster(const Spec& spec);

}  // namespace gpuctl
