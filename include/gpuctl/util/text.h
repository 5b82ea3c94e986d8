// Small string helpers used across the program: lists in messages and
// configuration lines, and trimming what a command printed.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace gpuctl {

// "a, b, c" (or with another separator): lists in messages, node lists and
// lines of rendered configuration.
std::string Join(const std::vector<std::string>& items, std::string_view separator = ", ");

// `text` without leading and trailing blank space.
std::string Trimmed(const std::string& text);

// The last `max_lines` lines of a command's output (trimmed), for messages
// and the journal.
std::string Tail(const std::string& text, std::size_t max_lines = 12);

// How long something took, as people read it: "12.3s" under a minute (the
// tenth tells a quick step from an instant one), then "4m15s", "1h02m03s".
std::string HumanDuration(std::chrono::milliseconds took);

// The local time of day, "14:03:07": how a line of a log says when.
std::string TimeOfDay();

}  // namespace gpuctl
