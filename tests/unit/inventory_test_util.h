// Helpers shared by the inventory tests: parse inline YAML as /lab/inv.yaml
// and look for a diagnostic by exact position plus a message fragment.
#pragma once

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "gpuctl/model/inventory.h"

namespace gpuctl::testing {

inline constexpr const char* kInventoryPath = "/lab/inv.yaml";

// A valid two-node cluster that tests append to or edit.
inline constexpr const char* kMinimalInventory = R"(cluster: lab
nodes:
  - name: m1
    address: 198.18.0.10
    os: ubuntu-22.04
    roles: [master]
  - name: w1
    address: 198.18.0.11
    os: ubuntu-22.04
    roles: [worker]
)";

struct Parsed {
  std::optional<Inventory> inventory;
  Diagnostics diagnostics;
};

inline Parsed ParseText(const std::string& text) {
  Parsed p;
  p.inventory = ParseInventory(text, kInventoryPath, p.diagnostics);
  return p;
}

// Passes when some diagnostic reads "/lab/inv.yaml:<line>:<column>: <kind>:
// ..." and contains `fragment`.
inline ::testing::AssertionResult HasDiagnostic(const Diagnostics& diagnostics, int line,
                                                int column, const std::string& fragment,
                                                Severity severity = Severity::kError) {
  const std::string prefix = std::string(kInventoryPath) + ":" + std::to_string(line) + ":" +
                             std::to_string(column) + ": " +
                             (severity == Severity::kError ? "error: " : "warning: ");
  for (const auto& d : diagnostics.All()) {
    const std::string text = d.Format();
    if (text.rfind(prefix, 0) == 0 && text.find(fragment) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "no diagnostic " << prefix << "..." << fragment << " among:\n"
         << diagnostics.Format();
}

}  // namespace gpuctl::testing
