#include "gpuctl/run/redact.h"

#include <algorithm>
#include <mutex>
#include <shared_mutex>

namespace gpuctl {

void Redactor::Add(const std::string& secret) {
  if (secret.size() < 4) {
    return;
  }
  std::lock_guard lock(mutex_);
  if (std::find(secrets_.begin(), secrets_.end(), secret) == secrets_.end()) {
    secrets_.push_back(secret);
    // Longest first, so a secret that contains another is replaced whole.
    std::sort(secrets_.begin(), secrets_.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  }
}

std::string Redactor::Apply(std::string text) const {
  static const std::string kMask = "<redacted>";
  std::shared_lock lock(mutex_);
  for (const auto& secret : secrets_) {
    for (std::size_t pos = text.find(secret); pos != std::string::npos;
         pos = text.find(secret, pos + kMask.size())) {
      text.replace(pos, secret.size(), kMask);
    }
  }
  return text;
}

}  // namespace gpuctl
