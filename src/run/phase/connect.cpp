// Connect: one SSH session per node for the whole run, opened in parallel.
#include <fmt/format.h>

#include "gpuctl/run/phase.h"

namespace gpuctl {
namespace {

class ConnectPhase : public Phase {
 public:
  [[nodiscard]] std::string Title() const override { return "connect"; }

  // Connect is the first phase, so this runs last: later phases' clean-ups
  // (releasing node locks) still have their connections.
  void CleanUp(RunContext& context) override {
    context.inputs.Close();
    for (const auto& node : context.inventory.nodes) {
      context.DropConnection(node.name);
    }
  }

  void Run(RunContext& context) override {
    const auto& nodes = context.inventory.nodes;
    ParallelEach(nodes.size(), context.options.concurrency, [&](std::size_t i) {
      const Node& node = nodes[i];
      if (context.ConnectionTo(node.name) != nullptr) {
        return;  // a resumed run may already hold one
      }
      Endpoint endpoint = Endpoint::For(node);
      endpoint.trust_on_first_use = context.options.trust_new_host_keys;
      context.redactor.Add(endpoint.become_password);
      const auto start = std::chrono::steady_clock::now();
      try {
        context.SetConnection(node.name, context.transport.Connect(endpoint));
        context.reporter.NodeConnected(node.name,
                                       std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - start));
      } catch (const TransportError& e) {
        Fail(context, node.name, e.what());
      } catch (const std::exception& e) {
        Fail(context, node.name, fmt::format("cannot connect: {}", e.what()));
      }
    });
  }

 private:
  static void Fail(RunContext& context, const std::string& node, const std::string& error) {
    context.FailNode(node, error);
    context.reporter.NodeFailed(node, error);
    context.plan.MarkUnreachable(node, error);
  }
};

}  // namespace

std::unique_ptr<Phase> MakeConnectPhase() { return std::make_unique<ConnectPhase>(); }

}  // namespace gpuctl
