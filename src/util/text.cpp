#include "gpuctl/util/text.h"

#include <fmt/format.h>

#include <ctime>

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

std::string HumanDuration(std::chrono::milliseconds took) {
  if (took < std::chrono::seconds(60)) {
    return fmt::format("{:.1f}s", static_cast<double>(took.count()) / 1000.0);
  }
  const long long seconds = (took.count() + 500) / 1000;
  if (seconds >= 3600) {
    return fmt::format("{}h{:02}m{:02}s", seconds / 3600, seconds % 3600 / 60, seconds % 60);
  }
  return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
}

std::string TimeOfDay() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  return std::strftime(text, sizeof(text), "%H:%M:%S", &local) > 0 ? text : "";
}

}  // namespace gpuctl
