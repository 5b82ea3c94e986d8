#include "cli/inputs.h"

#include "gpuctl/run/parallel.h"
#include "gpuctl/run/script_trace.h"
#include "gpuctl/transport/ssh_transport.h"

namespace gpuctl::cli {

void AddConnectOptions(CLI::App& cmd, ConnectOptions& options) {
  options.concurrency = kDefaultConcurrency;
  cmd.add_option("-j,--concurrency", options.concurrency, "Nodes worked on at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd.add_flag("--trust-new-host-keys", options.trust_new_host_keys,
               "Accept and record host keys of nodes not yet in known_hosts (first contact only; "
               "a changed key is always refused)");
}

SpecOptions SpecOptionsFrom(const GlobalOptions& global) {
  return {global.playbooks, global.only, global.limit, global.exclude};
}

std::unique_ptr<Transport> NodeTransport() { return TraceScriptsFromEnv(MakeSshTransport()); }

}  // namespace gpuctl::cli
