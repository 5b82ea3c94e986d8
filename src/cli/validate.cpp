// gpuctl validate: read the inventory and the catalog, report every problem.
#include <iostream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"

namespace gpuctl::cli {
namespace {

// The diagnostics LoadSpec printed, one object each. Its lines have one
// documented shape ("file:line:column: error|warning: message", or
// "file: error: message" for a file that cannot be read); the closing
// "gpuctl: N error(s)" summary is left out.
nlohmann::json Diagnostics(const std::string& printed) {
  static const std::regex kLine(R"(^(.*?)(?::(\d+):(\d+))?: (error|warning): (.*)$)");
  nlohmann::json list = nlohmann::json::array();
  std::istringstream lines(printed);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (line.starts_with("gpuctl: ") || !std::regex_match(line, m, kLine)) {
      continue;
    }
    list.push_back({{"file", m[1].str()},
                    {"line", m[2].matched ? std::stoi(m[2].str()) : 0},
                    {"column", m[3].matched ? std::stoi(m[3].str()) : 0},
                    {"severity", m[4].str()},
                    {"message", m[5].str()}});
  }
  return list;
}

}  // namespace

void SetValidateCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Check an inventory and the step catalog without contacting any node.\n"
      "Prints every error as file:line:column; exit status 1 if there is any.\n"
      "-o json: {format: gpuctl.validate/v1, valid, nodes, steps, diagnostics}.");
  auto inventory = std::make_shared<std::string>();
  cmd->add_option("inventory", *inventory, "Inventory YAML file")->required();
  cmd->callback([inventory, &global, &exit_code] {
    if (global.output == "json") {
      std::ostringstream printed;
      const auto spec = LoadSpec(*inventory, SpecOptionsFrom(global), printed);
      const nlohmann::json doc = {{"format", "gpuctl.validate/v1"},
                                  {"inventory", *inventory},
                                  {"valid", spec.has_value()},
                                  {"nodes", spec ? spec->inventory.nodes.size() : 0},
                                  {"steps", spec ? spec->catalog.steps().size() : 0},
                                  {"diagnostics", Diagnostics(printed.str())}};
      std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      exit_code = spec ? kExitOk : kExitError;
      return;
    }
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
