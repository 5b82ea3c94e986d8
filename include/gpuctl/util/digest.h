// A short content digest (64-bit FNV-1a, 16 hex digits). Used to notice that a
// step, a catalog or an inventory changed between plan and apply; not a
// security boundary, so a fast non-cryptographic hash is enough.
#pragma once

#include <string>
#include <string_view>

namespace gpuctl {

std::string Digest(std::string_view text);

// SHA-256 of `text` in lower-case hex, as `sha256sum` prints it: for a value
// a node compares with its own files (OpenSSL's libcrypto computes it).
std::string Sha256Hex(std::string_view text);

}  // namespace gpuctl
