// Node ranges: `gpu[01-16]` for sixteen names, written once. Used by the
// inventory (a node entry or an address that stands for many) and by
// --limit/--exclude (which nodes a run works on).
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpuctl {

// At most this many names from one pattern (a typo such as gpu[1-100000000]
// is refused rather than expanded).
inline constexpr std::size_t kMaxRangeNames = 100000;

// Expands a pattern into names, in order: "gpu[01-16]" -> gpu01 .. gpu16
// (the width of the lower bound's digits is kept: [01-16] pads to two, [1-16]
// does not); "gpu[1-3,7]" -> gpu1 gpu2 gpu3 gpu7; several groups multiply
// ("r[1-2]n[1-2]"); text without brackets is one name. nullopt, with
// `error` set, for a malformed pattern (unclosed bracket, reversed or empty
// range, non-digit bound, too many names).
std::optional<std::vector<std::string>> ExpandRange(std::string_view pattern, std::string& error);

// Whether `text` holds a bracket group (is a range rather than one name).
bool IsRange(std::string_view text);

// Splits "worker1,gpu[1-3,7]" at the commas outside brackets.
std::vector<std::string> SplitPatterns(std::string_view text);

// Which nodes a run works on: every name `limit` matches (all when `limit`
// is empty), less every name `exclude` matches. Each element of both is a
// comma-separated list of names or ranges. A name that matches no node, a
// range none of whose names is a node, or a selection left empty is an
// error (with a did-you-mean among `nodes`): nullopt with `error` set.
// `nodes` is in inventory order; the result is the selected names.
std::optional<std::set<std::string>> SelectNodes(const std::vector<std::string>& nodes,
                                                 const std::vector<std::string>& limit,
                                                 const std::vector<std::string>& exclude,
                                                 std::string& error);

}  // namespace gpuctl
