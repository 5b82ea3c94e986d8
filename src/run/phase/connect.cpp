// Connect: one SSH session per node for the whole run, opened in parallel.
#include <fmt/format.h>

#include "gpuctl/run/phase.h"

namespace gpuctl {
namespace {

// Where the node is declared ("inventory.yaml:42:5", or "" if unknown).
std::string Declared(const Node& node) {
  if (node.where.file.empty() || node.where.line == 0) {
    return node.where.file;
  }
  return fmt::format("{}:{}:{}", node.where.file, node.where.line, node.where.column);
}

// What to look at for a connection that failed this way, naming the
// inventory line the address, user or key came from: the transport's
// message says what happened, this says where to start.
std::string ConnectHint(const Node& node, ConnectFailure kind) {
  const std::string declared = Declared(node);
  const std::string at = declared.empty() ? "" : " (declared at " + declared + ")";
  const std::string via =
      node.ssh.jump_host.empty() ? "" : fmt::format(" through jump host {}", node.ssh.jump_host);
  switch (kind) {
    case ConnectFailure::kUnreachable:
    case ConnectFailure::kTimeout:
      return fmt::format(
          "\n  hint: is {} up, is {} its address{}, and is port {} open from here{}? "
          "Try: ssh -p {} {}@{} true",
          node.name, node.address, at, node.ssh.port, via, node.ssh.port, node.ssh.user,
          node.address);
    case ConnectFailure::kAuth:
      return fmt::format(
          "\n  hint: the node must accept user {} with {}{}: check its "
          "~{}/.ssh/authorized_keys, or set ssh.user / ssh.identity_file in the inventory",
          node.ssh.user,
          node.ssh.identity_file.empty() ? "your default key or ssh-agent" : node.ssh.identity_file,
          at, node.ssh.user);
    default:
      return "";
  }
}

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
    const auto nodes = context.HealthyNodes();  // not those a limited run leaves out
    ParallelEach(nodes.size(), context.options.concurrency, [&](std::size_t i) {
      const Node& node = *nodes[i];
      if (context.ConnectionTo(node.name) != nullptr) {
        return;  // a resumed run may already hold one
      }
      Endpoint endpoint = Endpoint::For(node);
      endpoint.trust_on_first_use = context.options.trust_new_host_keys;
      context.redactor.Add(endpoint.become_password);
      const auto start = std::chrono::steady_clock::now();
      try {
        auto connection = context.transport.Connect(endpoint);
        context.SetNodeHostKey(node.name, connection->HostKey());
        context.SetConnection(node.name, std::move(connection));
        context.reporter.NodeConnected(node.name,
                                       std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - start));
      } catch (const TransportError& e) {
        Fail(context, node.name, e.what(), ConnectHint(node, e.kind()));
      } catch (const std::exception& e) {
        Fail(context, node.name, fmt::format("cannot connect: {}", e.what()));
      }
    });
  }

 private:
  // The hint goes with the node's error, said once, not into each of its
  // items' details.
  static void Fail(RunContext& context, const std::string& node, const std::string& error,
                   const std::string& hint = "") {
    context.FailNode(node, error + hint);
    context.reporter.NodeFailed(node, error + hint);
    context.plan.MarkUnreachable(node, error);
  }
};

}  // namespace

std::unique_ptr<Phase> MakeConnectPhase() { return std::make_unique<ConnectPhase>(); }

}  // namespace gpuctl
