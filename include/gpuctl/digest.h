// Content digests: how a saved plan notices that its inputs changed.
//
// 64-bit FNV-1a. It only has to tell "same catalog" from "edited catalog", not
// resist someone forging a collision, so a few lines beat a crypto dependency.
#pragma once

#include <string>
#include <string_view>

namespace gpuctl {

// 16 lower-case hex digits.
std::string Digest(std::string_view data);

}  // namespace gpuctl
