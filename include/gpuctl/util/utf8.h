// Text from nodes as JSON can carry it. A probe may print any bytes (a
// Latin-1 device name, a binary file, output cut mid-character by a cap),
// but JSON strings are UTF-8 and nlohmann::json refuses to write anything
// else, so a saved plan keeps node output in this form.
#pragma once

#include <string>
#include <string_view>

namespace gpuctl {

// `text` with every byte that does not belong to a well-formed UTF-8
// sequence (RFC 3629: no overlong forms, no surrogates, nothing above
// U+10FFFF) replaced by U+FFFD; valid text comes back unchanged.
std::string ValidUtf8(std::string_view text);

}  // namespace gpuctl
