// gpuctl validate: read the inventory and the catalog, report every problem.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "gpuctl/util/input_file.h"

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

// The SSH keys the inventory names must be there and readable by whoever
// runs gpuctl: found at validate, not node by node at connect. One line per
// key file, at the first node that uses it. Returns the number of errors.
int CheckKeyFiles(const Spec& spec, std::ostream& err) {
  std::map<std::string, std::vector<const Node*>> users;
  for (const Node& node : spec.inventory.nodes) {
    if (!node.ssh.identity_file.empty()) {
      users[node.ssh.identity_file].push_back(&node);
    }
  }
  int errors = 0;
  for (const auto& [path, nodes] : users) {
    std::string why;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      why = "no such file";
    } else if (why = CheckInputFile(path, kMaxIdentityFileBytes);
               why.empty() && access(path.c_str(), R_OK) != 0) {
      why = "not readable by this user";
    }
    if (why.empty()) {
      continue;
    }
    const Node& first = *nodes.front();
    err << fmt::format("{}:{}:{}: error: ssh.identity_file {} ({}{}): {}\n", first.where.file,
                       first.where.line, first.where.column, path, first.name,
                       nodes.size() > 1 ? fmt::format(" and {} more nodes", nodes.size() - 1) : "",
                       why);
    ++errors;
  }
  return errors;
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
      const bool valid = spec && CheckKeyFiles(*spec, printed) == 0;
      const nlohmann::json doc = {{"format", "gpuctl.validate/v1"},
                                  {"inventory", *inventory},
                                  {"valid", valid},
                                  {"nodes", spec ? spec->inventory.nodes.size() : 0},
                                  {"steps", spec ? spec->catalog.steps().size() : 0},
                                  {"diagnostics", Diagnostics(printed.str())}};
      std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      exit_code = valid ? kExitOk : kExitError;
      return;
    }
    const auto spec = LoadSpec(*inventory, SpecOptionsFrom(global), std::cerr);
    if (!spec) {
      exit_code = kExitError;
      return;
    }
    if (const int errors = CheckKeyFiles(*spec, std::cerr); errors > 0) {
      std::cerr << "gpuctl: " << errors << " error(s); nothing was sent to any node\n";
      exit_code = kExitError;
      return;
    }
    std::cout << *inventory << ": ok (" << spec->inventory.nodes.size() << " nodes, "
              << spec->catalog.steps().size() << " catalog steps)\n";
    exit_code = kExitOk;
  });
}

}  // namespace gpuctl::cli
