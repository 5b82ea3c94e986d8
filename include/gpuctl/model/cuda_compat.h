// Which NVIDIA Linux driver a CUDA toolkit can run on.
//
// From NVIDIA's CUDA release notes (table 3, "CUDA Toolkit and Minimum
// Required Driver Version"): each toolkit ships with a driver it fully
// supports, and since CUDA 11 a toolkit also runs on any driver from the first
// of its major version (minor-version compatibility), minus features that need
// the newer driver (e.g. PTX JIT of code built for it). gpuctl treats the
// first as fine, the second as a warning and anything older as an error,
// because the driver is installed before the toolkit and a mismatch only shows
// when a job fails.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuctl {

struct CudaRelease {
  std::string_view version;     // "12.4"
  std::string_view min_driver;  // driver shipped with the toolkit, "550.54.14"
};

// Every known toolkit, oldest first.
const std::vector<CudaRelease>& CudaReleases();
std::vector<std::string> KnownCudaVersions();
// The oldest driver a CUDA major version runs on through minor-version
// compatibility ("525.60.13" for 12); nullopt for a major gpuctl does not know.
std::optional<std::string_view> MinorVersionCompatDriver(int cuda_major);

// A driver branch ("550") or a full driver version ("550.54.14").
bool IsDriverVersion(std::string_view text);

enum class CudaDriverFit {
  kFull,                // the driver is at least the toolkit's own
  kMinorVersionCompat,  // runs, without features that need a newer driver
  kTooOld,              // below the major version's minimum
  kUnknownCuda,         // not in the table
  kBadDriver,           // not a branch or a version
};

struct CudaDriverCheck {
  CudaDriverFit fit = CudaDriverFit::kFull;
  std::string message;  // why, for a diagnostic; empty for kFull
};

// A branch is compared by its major number, since installing a branch brings
// its newest release; a full version is compared component by component.
// `cuda` is "12.4" (a patch, "12.4.1", is judged as 12.4).
CudaDriverCheck CheckCudaDriver(std::string_view cuda, std::string_view driver);

}  // namespace gpuctl
