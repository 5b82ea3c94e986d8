// Diagnostic: one problem found in a user's file, with where it is.
//
// Every loader (inventory, catalog, saved plan) reports through Diagnostics so
// that `gpuctl validate` can print all problems at once, each as
// "file:line:column: error: message", the format editors and CI parse.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace gpuctl {

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown
};

enum class Severity { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  SourceLocation where;
  std::string message;

  // "inventory.yaml:12:5: error: unknown key 'adress' (did you mean 'address'?)"
  [[nodiscard]] std::string Format() const;
};

class Diagnostics {
 public:
  void Error(SourceLocation where, std::string message);
  void Warning(SourceLocation where, std::string message);

  [[nodiscard]] bool HasErrors() const;
  [[nodiscard]] const std::vector<Diagnostic>& All() const { return items_; }
  [[nodiscard]] std::size_t ErrorCount() const;
  // Every diagnostic, one per line, in the order found.
  [[nodiscard]] std::string Format() const;
  void Append(const Diagnostics& other);

 private:
  std::vector<Diagnostic> items_;
};

// Thrown when a loader cannot produce a usable object; carries every
// diagnostic gathered up to that point.
class LoadError : public std::runtime_error {
 public:
  explicit LoadError(Diagnostics diagnostics);
  [[nodiscard]] const Diagnostics& diagnostics() const { return diagnostics_; }

 private:
  Diagnostics diagnostics_;
};

}  // namespace gpuctl
