// What the commands that work on nodes share on the command line: the
// connection options, the spec options from the global ones, and the SSH
// transport they run over.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"
#include "gpuctl/action/spec.h"
#include "gpuctl/run/run_context.h"
#include "gpuctl/transport/transport.h"

namespace gpuctl::cli {

// Options shared by plan, apply and check.
struct ConnectOptions {
  std::size_t concurrency = 0;  // 0: default
  bool trust_new_host_keys = false;

  [[nodiscard]] RunOptions Run() const { return {concurrency, trust_new_host_keys}; }
};
void AddConnectOptions(CLI::App& cmd, ConnectOptions& options);

[[nodiscard]] SpecOptions SpecOptionsFrom(const GlobalOptions& global);

// libssh to every node; GPUCTL_TRACE_SCRIPTS adds a redacted trace
// (script_trace.h).
std::unique_ptr<Transport> NodeTransport();

}  // namespace gpuctl::cli
