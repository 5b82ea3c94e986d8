#include "gpuctl/util/digest.h"

#include <cstdint>

#include <fmt/format.h>

namespace gpuctl {

std::string Digest(std::string_view data) {
  constexpr std::uint64_t kOffsetBasis = 14695981039346656037ULL;
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t hash = kOffsetBasis;
  for (char c : data) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kPrime;
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace gpuctl
