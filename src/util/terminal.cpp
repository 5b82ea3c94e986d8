#include "gpuctl/util/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace gpuctl {
namespace {

constexpr std::string_view kEllipsis = "\xe2\x80\xa6";  // U+2026
constexpr std::string_view kReset = "\x1b[0m";

// Length of the ANSI escape sequence at `at` (ESC [ ... final byte), or 0.
std::size_t EscapeLength(std::string_view text, std::size_t at) {
  if (text[at] != '\x1b' || at + 1 >= text.size() || text[at + 1] != '[') {
    return 0;
  }
  std::size_t end = at + 2;
  while (end < text.size() && (static_cast<unsigned char>(text[end]) < 0x40 ||
                               static_cast<unsigned char>(text[end]) > 0x7e)) {
    ++end;
  }
  return end < text.size() ? end - at + 1 : text.size() - at;
}

// Bytes of the UTF-8 character starting at `at` (1 for a stray byte).
std::size_t CharLength(std::string_view text, std::size_t at) {
  std::size_t n = 1;
  while (at + n < text.size() && (static_cast<unsigned char>(text[at + n]) & 0xc0) == 0x80) {
    ++n;
  }
  return n;
}

std::size_t Columns(std::string_view line) {
  std::size_t columns = 0;
  for (std::size_t at = 0; at < line.size();) {
    if (const std::size_t esc = EscapeLength(line, at); esc > 0) {
      at += esc;
      continue;
    }
    at += CharLength(line, at);
    ++columns;
  }
  return columns;
}

// One dimension of the terminal on `fd`: the variable `env` when it holds a
// positive number (the user's override), else the kernel's window size.
std::size_t TerminalSize(int fd, const char* env, unsigned short winsize::*field) {
  if (isatty(fd) == 0) {
    return 0;
  }
  if (const char* value = std::getenv(env); value != nullptr && *value != '\0') {
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    if (*end == '\0' && n > 0) {
      return static_cast<std::size_t>(n);
    }
  }
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.*field > 0) {
    return size.*field;
  }
  return 0;
}

}  // namespace

std::size_t TerminalWidth(int fd) { return TerminalSize(fd, "COLUMNS", &winsize::ws_col); }

std::size_t TerminalHeight(int fd) { return TerminalSize(fd, "LINES", &winsize::ws_row); }

std::string FitLine(std::string_view line, std::size_t width) {
  if (width == 0 || Columns(line) <= width) {
    return std::string(line);
  }
  std::string out;
  bool coloured = false;
  std::size_t columns = 0;
  for (std::size_t at = 0; at < line.size();) {
    if (const std::size_t esc = EscapeLength(line, at); esc > 0) {
      out += line.substr(at, esc);
      coloured = true;
      at += esc;
      continue;
    }
    if (columns + 1 == width) {
      break;
    }
    const std::size_t n = CharLength(line, at);
    out += line.substr(at, n);
    at += n;
    ++columns;
  }
  out += kEllipsis;
  if (coloured) {
    out += kReset;
  }
  return out;
}

std::string FitLines(std::string_view text, std::size_t width) {
  if (width == 0) {
    return std::string(text);
  }
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool newline = end != std::string_view::npos;
    if (!newline) {
      end = text.size();
    }
    out += FitLine(text.substr(start, end - start), width);
    if (newline) {
      out += '\n';
    }
    start = end + 1;
  }
  return out;
}

}  // namespace gpuctl
