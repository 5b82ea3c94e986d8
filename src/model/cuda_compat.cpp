#include "gpuctl/model/cuda_compat.h"
#include "gpuctl/util/text.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "gpuctl/model/yaml_source.h"

namespace gpuctl {

namespace {

// Dotted decimal components; nullopt if any is not a number.
std::optional<std::vector<int>> Components(std::string_view text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t dot = text.find('.', start);
    if (dot == std::string_view::npos) {
      dot = text.size();
    }
    const std::string_view part = text.substr(start, dot - start);
    int value = 0;
    const char* end = part.data() + part.size();
    auto [ptr, ec] = std::from_chars(part.data(), end, value);
    if (part.empty() || ec != std::errc() || ptr != end || value < 0) {
      return std::nullopt;
    }
    out.push_back(value);
    start = dot + 1;
  }
  return out;
}

// Whether `driver` is at least `minimum`. A bare branch is compared by its
// major number only, so branch 550 satisfies 550.54.14.
bool AtLeast(const std::vector<int>& driver, std::string_view minimum) {
  const std::vector<int> min = Components(minimum).value();
  if (driver.size() == 1) {
    return driver[0] >= min[0];
  }
  return !std::lexicographical_compare(driver.begin(), driver.end(), min.begin(), min.end());
}

}  // namespace

const std::vector<CudaRelease>& CudaReleases() {
  static const std::vector<CudaRelease> kReleases = {
      {"11.0", "450.36.06"}, {"11.1", "455.23"},    {"11.2", "460.27.03"}, {"11.3", "465.19.01"},
      {"11.4", "470.42.01"}, {"11.5", "495.29.05"}, {"11.6", "510.39.01"}, {"11.7", "515.43.04"},
      {"11.8", "520.61.05"}, {"12.0", "525.60.13"}, {"12.1", "530.30.02"}, {"12.2", "535.54.03"},
      {"12.3", "545.23.06"}, {"12.4", "550.54.14"}, {"12.5", "555.42.02"}, {"12.6", "560.28.03"},
      {"12.8", "570.26"},    {"12.9", "575.51.03"}, {"13.0", "580.65.06"},
  };
  return kReleases;
}

std::vector<std::string> KnownCudaVersions() {
  std::vector<std::string> out;
  for (const auto& r : CudaReleases()) {
    out.emplace_back(r.version);
  }
  return out;
}

std::optional<std::string_view> MinorVersionCompatDriver(int cuda_major) {
  switch (cuda_major) {
    case 11:
      return "450.80.02";
    case 12:
      return "525.60.13";
    case 13:
      return "580";
    default:
      return std::nullopt;
  }
}

bool IsDriverVersion(std::string_view text) {
  auto parts = Components(text);
  return parts && !parts->empty() && parts->size() <= 3;
}

CudaDriverCheck CheckCudaDriver(std::string_view cuda, std::string_view driver) {
  auto driver_parts = Components(driver);
  if (!IsDriverVersion(driver) || !driver_parts) {
    return {CudaDriverFit::kBadDriver,
            fmt::format("invalid driver branch '{}': expected a branch like '550' or a "
                        "version like '550.54.14'",
                        driver)};
  }
  // "12.4.1" is an update of 12.4 and needs what 12.4 needs.
  std::string_view major_minor = cuda;
  if (const std::size_t first = cuda.find('.'); first != std::string_view::npos) {
    if (const std::size_t second = cuda.find('.', first + 1); second != std::string_view::npos) {
      major_minor = cuda.substr(0, second);
    }
  }
  const auto& releases = CudaReleases();
  auto release = std::find_if(releases.begin(), releases.end(),
                              [&](const CudaRelease& r) { return r.version == major_minor; });
  auto cuda_parts = Components(cuda);
  if (release == releases.end() || !cuda_parts) {
    return {CudaDriverFit::kUnknownCuda,
            fmt::format("unknown CUDA version '{}'; known: {}", cuda, Join(KnownCudaVersions()))};
  }
  const char* what = driver_parts->size() == 1 ? "driver branch" : "driver";
  if (AtLeast(*driver_parts, release->min_driver)) {
    return {};
  }
  const std::string_view compat = MinorVersionCompatDriver(cuda_parts->front()).value();
  if (AtLeast(*driver_parts, compat)) {
    return {CudaDriverFit::kMinorVersionCompat,
            fmt::format("{} {} runs CUDA {} only through minor-version compatibility (CUDA {} "
                        "ships with driver {}); features that need the newer driver, such as "
                        "PTX JIT, will fail",
                        what, driver, cuda, major_minor, release->min_driver)};
  }
  return {CudaDriverFit::kTooOld,
          fmt::format("{} {} cannot run CUDA {}: CUDA {}.x needs driver {} or newer ({} for "
                      "full support)",
                      what, driver, cuda, cuda_parts->front(), compat, release->min_driver)};
}

}  // namespace gpuctl
