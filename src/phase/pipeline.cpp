#include "gpuctl/phase.h"

namespace gpuctl {

Pipeline& Pipeline::Add(std::unique_ptr<Phase> phase) {
  phases_.push_back(std::move(phase));
  return *this;
}

void Pipeline::Run(RunContext& context) {
  for (auto& phase : phases_) {
    phase->Prepare(context);
  }
  auto clean_up = [&] {
    for (auto it = phases_.rbegin(); it != phases_.rend(); ++it) {
      (*it)->CleanUp(context);
    }
  };
  try {
    for (auto& phase : phases_) {
      if (phase->ShouldRun(context)) {
        context.reporter.PhaseStarted(phase->Title());
        phase->Run(context);
      }
    }
  } catch (...) {
    clean_up();
    throw;
  }
  clean_up();
}

}  // namespace gpuctl
