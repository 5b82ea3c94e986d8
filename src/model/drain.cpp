#include "gpuctl/model/drain.h"

#include <cstddef>

namespace gpuctl {

const std::vector<std::string>& RestartNames() {
  static const std::vector<std::string> kNames = {"containerd", "docker", "kubelet"};
  return kNames;
}

std::string DescribeRestarts(std::uint8_t restarts) {
  std::string text;
  for (std::size_t bit = 0; bit < RestartNames().size(); ++bit) {
    if ((restarts & (1U << bit)) != 0) {
      text += (text.empty() ? "" : ", ") + RestartNames()[bit];
    }
  }
  return text;
}

std::uint8_t ParseRestart(std::string_view name) {
  for (std::size_t bit = 0; bit < RestartNames().size(); ++bit) {
    if (RestartNames()[bit] == name) {
      return static_cast<std::uint8_t>(1U << bit);
    }
  }
  return 0;
}

}  // namespace gpuctl
