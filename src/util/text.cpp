#include "gpuctl/util/text.h"

namespace gpuctl {

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) {
      out += separator;
    }
    out += item;
  }
  return out;
}

std::string Trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return "";
  }
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::string Tail(const std::string& text, std::size_t max_lines) {
  const std::string trimmed = Trimmed(text);
  std::size_t pos = trimmed.size();
  for (std::size_t lines = 0; lines < max_lines && pos > 0; ++lines) {
    const auto nl = trimmed.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      return trimmed;
    }
    pos = nl;
  }
  return pos == 0 ? trimmed : trimmed.substr(pos + 1);
}

}  // namespace gpuctl
