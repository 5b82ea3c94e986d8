// Lines that fit the terminal: on a TTY, a line longer than the terminal is
// cut with an ellipsis rather than wrapped; into a file or a pipe nothing is
// cut, so scripts and logs keep every character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuctl {

// Columns of the terminal on `fd`: 0 (do not cut) when `fd` is not a
// terminal; else $COLUMNS when set to a number, else what the terminal says
// (TIOCGWINSZ), else 0.
std::size_t TerminalWidth(int fd);

// Rows of the terminal on `fd`: 0 when it is not a terminal; else $LINES
// when set to a number, else what the terminal says, else 0.
std::size_t TerminalHeight(int fd);

// `line` (no newline) cut to `width` columns, its last column "…" when cut.
// ANSI colour sequences take no column and a cut line ends its colour; a
// UTF-8 character is one column and never split. `width` 0: unchanged.
std::string FitLine(std::string_view line, std::size_t width);

// Every line of `text` fitted to `width`.
std::string FitLines(std::string_view text, std::size_t width);

}  // namespace gpuctl
