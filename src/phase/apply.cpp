// Apply: the change phase. Everything it changes goes through the Executor,
// which verifies each change before anything waiting on it may start.
#include "gpuctl/executor.h"
#include "gpuctl/phase.h"

namespace gpuctl {
namespace {

class ApplyPhase : public Phase {
 public:
  ApplyPhase(const ApplyOptions& options, std::function<bool(RunContext&)> proceed, bool& proceeded)
      : options_(options), proceed_(std::move(proceed)), proceeded_(proceeded) {}

  [[nodiscard]] std::string Title() const override { return "apply"; }

  void Run(RunContext& context) override {
    proceeded_ = proceed_(context);
    if (proceeded_) {
      Executor(context, options_).Run();
    }
  }

 private:
  ApplyOptions options_;
  std::function<bool(RunContext&)> proceed_;
  bool& proceeded_;
};

}  // namespace

std::unique_ptr<Phase> MakeApplyPhase(const ApplyOptions& options,
                                      std::function<bool(RunContext&)> proceed, bool& proceeded) {
  return std::make_unique<ApplyPhase>(options, std::move(proceed), proceeded);
}

}  // namespace gpuctl
