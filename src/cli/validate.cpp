// gpuctl validate: read the inventory and the catalog, report every problem.
#include <iostream>

#include "cli/commands.h"
#include "cli/inputs.h"

namespace gpuctl::cli {

void SetValidateCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd =
      app.add_subcommand("validate",
                         "Check an inventory and the step catalog without contacting any node.\n"
                         "Prints every error as file:line:column; exit status 1 if there is any.");
  auto inventory = std::make_shared<std::string>();
  cmd->add_option("inventory", *inventory, "Inventory YAML file")->required();
  cmd->callback([inventory, &global, &exit_code] {
    const auto spec = LoadSpec(*inventory, SpecOptionsFrom(global), std::cerr);
    if (!spec) {
      exit_code = kExitError;
      return;
    }
    std::cout << *inventory << ": ok (" << spec->inventory.nodes.size() << " nodes, "
              << spec->catalog.steps().size() << " catalog steps)\n";
    exit_code = kExitOk;
  });
}

}  // namespace gpuctl::cli
