#include "cli/inputs.h"

#include <chrono>
#include <filesystem>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "gpuctl/digest.h"
#include "gpuctl/input_file.h"
#include "gpuctl/parallel.h"
#include "gpuctl/script_trace.h"
#include "gpuctl/ssh_transport.h"
#include "gpuctl/yaml_source.h"

namespace gpuctl::cli {

std::optional<Inputs> LoadInputs(const std::string& inventory_path, const GlobalOptions& global,
                                 std::ostream& err) {
  Diagnostics diagnostics;
  // Read once: the digest a saved plan records is of the bytes validated.
  const auto text = yaml::ReadFile(inventory_path, kMaxInventoryBytes, diagnostics);
  auto inventory =
      text ? ParseInventory(*text, inventory_path, diagnostics) : std::optional<Inventory>();
  const std::string dir = global.playbooks.empty() ? DefaultPlaybookDir() : global.playbooks;
  auto catalog = Catalog::Load(dir, diagnostics);
  err << diagnostics.Format();
  if (!inventory || !catalog) {
    err << fmt::format("gpuctl: {} error(s); nothing was sent to any node\n",
                       diagnostics.ErrorCount());
    return std::nullopt;
  }
  if (!global.only.empty()) {
    std::string error;
    Catalog selected = catalog->Select(global.only, error);
    if (!error.empty()) {
      err << "gpuctl: " << error << "; nothing was sent to any node\n";
      return std::nullopt;
    }
    catalog = std::move(selected);
  }
  return Inputs{std::move(*inventory), std::move(*catalog), Digest(*text)};
}

PlanHeader HeaderFor(const Inputs& inputs) {
  PlanHeader h;
  h.cluster = inputs.inventory.cluster;
  // Absolute, so `gpuctl apply plan.json` works from any directory.
  h.inventory_path = std::filesystem::absolute(inputs.inventory.path).string();
  h.inventory_digest = inputs.inventory_digest;
  h.catalog_digest = inputs.catalog.Digest();
  for (const auto& node : inputs.inventory.nodes) {
    if (!node.os.IsAuto()) {  // an auto node the run could not identify records nothing
      h.node_os[node.name] = node.os.Name();
    }
  }
  h.created =
      fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                  std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  return h;
}

void AddConnectOptions(CLI::App& cmd, ConnectOptions& options) {
  options.concurrency = kDefaultConcurrency;
  cmd.add_option("-j,--concurrency", options.concurrency, "Nodes worked on at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd.add_flag("--trust-new-host-keys", options.trust_new_host_keys,
               "Accept and record host keys of nodes not yet in known_hosts (first contact only; "
               "a changed key is always refused)");
}

std::map<std::string, std::string> RunReadOnly(Inputs& inputs, Plan& plan, PlanScope scope,
                                               std::unique_ptr<Phase> phase,
                                               const ConnectOptions& connect,
                                               const GlobalOptions& global) {
  auto transport = TraceScriptsFromEnv(MakeSshTransport());
  LineReporter reporter(std::cerr, global.verbosity);
  RunContext context(inputs.inventory, inputs.catalog, plan, *transport, reporter,
                     {connect.concurrency, connect.trust_new_host_keys});
  TraceRedactor(*transport, context.redactor);
  Pipeline pipeline;
  pipeline.Add(MakeConnectPhase())
      .Add(MakeIdentifyPhase())
      .Add(MakePlanPhase(inputs.inventory, scope))
      .Add(std::move(phase));
  pipeline.Run(context);
  return context.NodeErrors();
}

}  // namespace gpuctl::cli
