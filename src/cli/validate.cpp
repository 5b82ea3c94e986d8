#include <iostream>

#include "cli/commands.h"
#include "gpuctl/inventory.h"

namespace gpuctl::cli {

void SetValidateCommand(CLI::App& app, const GlobalOptions& /*global*/, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "validate", "Check an inventory (and the step catalog) without touching any node");
  auto inventory = std::make_shared<std::string>();
  cmd->add_option("inventory", *inventory, "Inventory YAML file")->required();
  cmd->callback([inventory, &exit_code] {
    Diagnostics diagnostics;
    auto inv = LoadInventory(*inventory, diagnostics);
    std::cerr << diagnostics.Format();
    if (!inv) {
      std::cerr << diagnostics.ErrorCount() << " error(s) in " << *inventory << "\n";
      exit_code = kExitError;
      return;
    }
    std::cout << *inventory << ": ok (" << inv->nodes.size() << " nodes)\n";
    exit_code = kExitOk;
  });
}

}  // namespace gpuctl::cli
