// Node names as a person reads a list of many: "gpu[01-16]" for gpu01 to
// gpu16, "gpu[01-03,05],login1" for a run with a gap and another name.
// Output that would repeat the same lines for identical nodes prints them
// once under such a name list.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuctl {

// `names` (in the order given) folded into bracket ranges: names that share
// a prefix and end in numbers of the same width make one "prefix[a-b,c]"
// group, placed where its first name was; other names stay as they are.
std::string CompressNodeNames(const std::vector<std::string>& names);

// `text` with every occurrence of `name` replaced by `with`: how lines of
// different nodes are compared (and shown folded).
std::string WithoutName(std::string_view text, std::string_view name, std::string_view with);

}  // namespace gpuctl
