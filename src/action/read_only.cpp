#include "gpuctl/action/read_only.h"

#include "gpuctl/run/phase.h"
#include "gpuctl/run/script_trace.h"

namespace gpuctl {
namespace {

ReadOnlyResult RunReadOnly(Spec& spec, Transport& transport, Reporter& progress,
                           const RunOptions& options, PlanScope scope, std::unique_ptr<Phase> last,
                           bool refuse_outside_limit) {
  ReadOnlyResult result;  // its plan is built once every node's OS is known
  RunContext context(spec.inventory, spec.catalog, result.plan, transport, progress, options);
  TraceRedactor(transport, context.redactor);
  Pipeline pipeline;
  pipeline.Add(MakeReachPhase(spec.reach))
      .Add(MakeConnectPhase())
      .Add(MakeIdentifyPhase())
      .Add(MakePlanPhase(spec.inventory, scope))
      .Add(MakeLimitPhase(spec.targets))
      .Add(std::move(last));
  if (refuse_outside_limit) {  // plan; check changes nothing anywhere
    pipeline.Add(MakeLimitRefusalPhase(spec.targets, false));
  }
  pipeline.Run(context);
  result.node_errors = context.NodeErrors();
  return result;
}

}  // namespace

ReadOnlyResult PlanAction(Spec& spec, Transport& transport, Reporter& progress,
                          const RunOptions& options) {
  return RunReadOnly(spec, transport, progress, options, PlanScope::kConverge, MakeProbePhase(),
                     true);
}

ReadOnlyResult CheckAction(Spec& spec, Transport& transport, Reporter& progress,
                           const RunOptions& options, bool deep) {
  return RunReadOnly(spec, transport, progress, options,
                     deep ? PlanScope::kDeepCheck : PlanScope::kConverge, MakeCheckPhase(), false);
}

}  // namespace gpuctl
