// Apply: the change phase. Everything it changes goes through the Executor,
// which verifies each change before anything waiting on it may start.
#include "gpuctl/run/executor.h"
#include "gpuctl/run/phase.h"

namespace gpuctl {
namespace {

class ApplyPhase : public Phase {
 public:
  ApplyPhase(const ApplyOptions& options, std::size_t* max_reboots)
      : options_(options), max_reboots_(max_reboots) {}

  [[nodiscard]] std::string Title() const override { return "apply"; }

  void Run(RunContext& context) override {
    Executor executor(context, options_);
    executor.Run();
    if (max_reboots_ != nullptr) {
      *max_reboots_ = executor.MaxConcurrentReboots();
    }
  }

 private:
  ApplyOptions options_;
  std::size_t* max_reboots_;
};

}  // namespace

std::unique_ptr<Phase> MakeApplyPhase(const ApplyOptions& options,
                                      std::size_t* max_concurrent_reboots) {
  return std::make_unique<ApplyPhase>(options, max_concurrent_reboots);
}

}  // namespace gpuctl
