#include "gpuctl/run/phase.h"

namespace gpuctl {

Pipeline& Pipeline::Add(std::unique_ptr<Phase> phase) {
  phases_.push_back(std::move(phase));
  return *this;
}

void Pipeline::Start(RunContext& context) {
  while (started_ < phases_.size()) {
    Phase& phase = *phases_[started_++];
    context.reporter.PhaseStarted(phase.Title());
    phase.Run(context);
  }
}

void Pipeline::CleanUp(RunContext& context) {
  for (std::size_t i = started_; i > cleaned_; --i) {
    phases_[i - 1]->CleanUp(context);
  }
  cleaned_ = started_;
}

void Pipeline::Run(RunContext& context) {
  try {
    Start(context);
  } catch (...) {
    CleanUp(context);
    throw;
  }
  CleanUp(context);
}

}  // namespace gpuctl
