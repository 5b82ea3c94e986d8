// The version gpuctl reports, set by CMake from project(VERSION).
#pragma once

namespace gpuctl {
inline constexpr const char* kVersion = GPUCTL_VERSION;
}  // namespace gpuctl
