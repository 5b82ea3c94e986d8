#include "gpuctl/model/diagnostic.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpuctl {

std::string Diagnostic::Format() const {
  const char* kind = severity == Severity::kError ? "error" : "warning";
  if (where.line > 0) {
    return fmt::format("{}:{}:{}: {}: {}", where.file, where.line, where.column, kind, message);
  }
  if (!where.file.empty()) {
    return fmt::format("{}: {}: {}", where.file, kind, message);
  }
  return fmt::format("{}: {}", kind, message);
}

void Diagnostics::Error(SourceLocation where, std::string message) {
  items_.push_back({Severity::kError, std::move(where), std::move(message)});
}

void Diagnostics::Warning(SourceLocation where, std::string message) {
  items_.push_back({Severity::kWarning, std::move(where), std::move(message)});
}

bool Diagnostics::HasErrors() const { return ErrorCount() > 0; }

std::size_t Diagnostics::ErrorCount() const {
  return static_cast<std::size_t>(
      std::count_if(items_.begin(), items_.end(),
                    [](const Diagnostic& d) { return d.severity == Severity::kError; }));
}

std::string Diagnostics::Format() const {
  std::string out;
  for (const auto& d : items_) {
    out += d.Format();
    out += '\n';
  }
  return out;
}

void Diagnostics::Append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

LoadError::LoadError(Diagnostics diagnostics)
    : std::runtime_error(diagnostics.Format()), diagnostics_(std::move(diagnostics)) {}

}  // namespace gpuctl
