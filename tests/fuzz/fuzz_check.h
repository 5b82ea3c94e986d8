// Helpers shared by the libFuzzer targets in this directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gpuctl::fuzz {

// The fuzzer's bytes as the text a loader or parser receives.
inline std::string Text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A property the code under test promises. Breaking it aborts, which
// libFuzzer reports like any sanitizer finding, saving the input.
inline void Check(bool holds, const char* promise) {
  if (!holds) {
    std::fprintf(stderr, "gpuctl fuzz: broken promise: %s\n", promise);
    std::abort();
  }
}

}  // namespace gpuctl::fuzz
