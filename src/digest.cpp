#include "gpuctl/digest.h"

#include <cstdint>

#include <fmt/format.h>

namespace gpuctl {

std::string Digest(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace gpuctl
