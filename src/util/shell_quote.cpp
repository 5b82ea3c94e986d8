#include "gpuctl/util/shell_quote.h"

namespace gpuctl {

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'') {
      quoted += "'\\''";  // close, an escaped quote, reopen
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace gpuctl
