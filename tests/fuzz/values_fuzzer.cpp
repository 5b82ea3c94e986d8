// The short values the inventory loader and the CLI parse on their own: the
// CUDA/driver compatibility check (versions.cuda against driver_branch), OS
// and role names, item states (saved plans), --batch, key fingerprints, and
// every value kind (value_kinds.h, syntax.h). Input: two values separated by
// the first newline (the CUDA version and the driver for the compat check).
#include <stdexcept>

#include "fuzz_check.h"
#include "gpuctl/model/cuda_compat.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/model/repositories.h"
#include "gpuctl/model/syntax.h"
#include "gpuctl/model/value_kinds.h"
#include "gpuctl/run/executor.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuctl::fuzz::Check;
  const std::string text = gpuctl::fuzz::Text(data, size);
  const std::size_t newline = text.find('\n');
  const std::string first = text.substr(0, newline);
  const std::string second = newline == std::string::npos ? "" : text.substr(newline + 1);

  const auto fit = gpuctl::CheckCudaDriver(first, second);
  Check((fit.fit == gpuctl::CudaDriverFit::kFull) == fit.message.empty(),
        "a CUDA/driver verdict other than a full fit says why");
  (void)gpuctl::IsDriverVersion(first);

  if (const auto os = gpuctl::ParseOs(first)) {
    const auto again = gpuctl::ParseOs(os->Name());
    Check(again && again->Name() == os->Name() && again->family == os->family,
          "an OS name reads back as itself");
  }
  (void)gpuctl::EndOfLifeAdvice(first);
  if (const auto role = gpuctl::ParseRole(first)) {
    Check(gpuctl::ParseRole(gpuctl::ToString(*role)) == role, "a role name reads back as itself");
  }
  gpuctl::ItemState state{};
  if (gpuctl::ParseItemState(first, state)) {
    Check(gpuctl::ToString(state) == first, "an item state reads back as itself");
  }
  try {
    (void)gpuctl::ParseBatch(first, second.size());
  } catch (const std::invalid_argument&) {
    // Its documented refusal; apply prints it as a --batch error.
  } catch (const std::out_of_range&) {
    // A count beyond unsigned long, from std::stoul; the same handler.
  }
  if (const auto fingerprint = gpuctl::NormalizeFingerprint(first)) {
    Check(gpuctl::NormalizeFingerprint(*fingerprint) == fingerprint,
          "a normalized fingerprint is already normal");
  }

  for (auto problem :
       {gpuctl::HostNameProblem, gpuctl::AddressProblem, gpuctl::CidrProblem,
        gpuctl::NfsClientProblem, gpuctl::MountOptionsProblem, gpuctl::AbsolutePathProblem,
        gpuctl::LocalPathProblem, gpuctl::SlurmNameProblem, gpuctl::ClusterNameProblem,
        gpuctl::IbDeviceProblem, gpuctl::GpuModelProblem, gpuctl::VersionProblem,
        gpuctl::InterfaceNameProblem, gpuctl::EnvVarNameProblem, gpuctl::UserNameProblem,
        gpuctl::UrlProblem}) {
    (void)problem(first);
  }
  for (auto is : {gpuctl::IsIpv4, gpuctl::IsIpv6, gpuctl::IsHostname, gpuctl::IsAddress,
                  gpuctl::IsCidr, gpuctl::IsJumpHost, gpuctl::IsEnvVarName}) {
    (void)is(first);
  }
  return 0;
}
