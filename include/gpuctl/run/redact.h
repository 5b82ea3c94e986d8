// Redactor: keeps secrets (join tokens, passwords, keys) out of everything a
// person or a file will see. Every value registered here is replaced by
// "<redacted>" in terminal lines, logs, the journal and saved plans.
#pragma once

#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace gpuctl {

class Redactor {
 public:
  // Values shorter than 4 characters are ignored: redacting "1" or "yes"
  // everywhere would garble output without protecting anything.
  void Add(const std::string& secret);
  [[nodiscard]] std::string Apply(std::string text) const;

 private:
  // Shared: every command's script and output pass through Apply, from every
  // node's thread; only Add writes.
  mutable std::shared_mutex mutex_;
  std::vector<std::string> secrets_;
};

}  // namespace gpuctl
