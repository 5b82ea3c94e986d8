// gpuctl lab: the lab of fake nodes (lab/gpuctl-lab), reachable from the main
// binary the way `kind create cluster` is, so the demo reads as one tool.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "cli/commands.h"

namespace gpuctl::cli {
namespace {

std::string LabScript() {
  if (const char* env = std::getenv("GPUCTL_LAB_SCRIPT")) {
    return env;
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share/gpuctl/lab/gpuctl-lab";
    if (std::filesystem::exists(installed)) {
      return installed.string();
    }
  }
  return std::string(GPUCTL_SOURCE_DIR) + "/lab/gpuctl-lab";
}

}  // namespace

void SetLabCommand(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("lab",
                         "Fake GPU nodes on this machine for demos and tests (needs root):\n"
                         "  gpuctl lab up [--name N] [--nodes N] [--profile seed|mixed|slurm]\n"
                         "  gpuctl lab status|down [--name N]   (see `gpuctl lab help`)");
  cmd->prefix_command();  // everything after `lab` goes to the lab script
  // ...not to gpuctl's global options, which the other commands accept
  // after their name (main.cpp's fallthrough).
  cmd->fallthrough(false);
  cmd->callback([cmd, &exit_code] {
    const std::string script = LabScript();
    std::vector<std::string> args = {script};
    for (const auto& extra : cmd->remaining()) {
      args.push_back(extra);
    }
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    execv(script.c_str(), argv.data());
    std::cerr << "gpuctl: cannot run " << script << ": " << std::strerror(errno) << '\n';
    exit_code = kExitError;
  });
}

}  // namespace gpuctl::cli
