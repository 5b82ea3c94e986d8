// Multi-Instance GPU (MIG): the GPU instance profiles a model offers, and
// where a layout's instances go on one GPU.
//
// A seven-slice GPU (A100, H100, H200, B200) has 7 compute slices and 8
// memory slices; each GPU instance (GI) profile takes some of both and may
// start only at certain memory slices (NVIDIA's MIG user guide, "Supported
// MIG Profiles" and `nvidia-smi mig -lgipp`). Whether a layout fits depends
// on the placements, not only on the sums: 3g + 2g + 1g + 1g fits only with
// the 3g at slice 4. gpuctl finds the placement when it reads the inventory
// and creates every instance at it, so a layout validate accepts is one the
// driver accepts in any order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuctl {

struct MigProfile {
  std::string name;         // "1g.10gb", "1g.10gb+me"
  int id = 0;               // the GI profile id nvidia-smi prints (19 for 1g.10gb)
  int compute = 0;          // compute slices of 7
  int memory = 0;           // memory slices of 8
  int most = 0;             // instances of this profile one GPU can hold
  std::vector<int> starts;  // memory slices an instance may start at
};

inline constexpr int kMigComputeSlices = 7;
inline constexpr int kMigMemorySlices = 8;

// The GI profiles of a GPU model as nvidia-smi names it ("NVIDIA A100-SXM4-80GB");
// empty when gpuctl knows no MIG profiles for it (no MIG, or not listed).
std::vector<MigProfile> MigProfiles(std::string_view model);
// The models MigProfiles knows, for messages.
std::string MigModelsText();

struct MigPlacement {
  std::string profile;
  int start = 0;  // the first memory slice
};

// A placement of every instance of `wanted` (profile names of `profiles`),
// largest first, or nullopt when they cannot share one GPU; then `why` says
// what does not fit.
std::optional<std::vector<MigPlacement>> PlaceMig(const std::vector<MigProfile>& profiles,
                                                  const std::vector<std::string>& wanted,
                                                  std::string& why);

}  // namespace gpuctl
