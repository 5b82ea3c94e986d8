// Identify: what each node really runs, from its os-release, before anything
// is planned for it. Without this a Debian host declared rocky-9 would get a
// plan of dnf steps and apply would run them there.
#include <fmt/format.h>

#include "gpuctl/model/os_release.h"
#include "gpuctl/run/phase.h"

namespace gpuctl {
namespace {

class IdentifyPhase : public Phase {
 public:
  [[nodiscard]] std::string Title() const override { return "identify"; }

  void Run(RunContext& context) override {
    const auto nodes = context.HealthyNodes();
    ParallelEach(nodes.size(), context.options.concurrency,
                 [&](std::size_t i) { Identify(context, *nodes[i]); });
  }

 private:
  static void Identify(RunContext& context, const Node& node) {
    Connection* connection = context.ConnectionTo(node.name);
    if (connection == nullptr) {
      return;
    }
    Command command;
    command.script = OsReleaseScript();
    // Reading a small file: a node that takes longer is not well enough to
    // be worked on, and the run should not hang on it for the step timeout.
    command.timeout = std::chrono::seconds(node.ssh.connect_timeout_s);
    const CommandResult result = context.RunnerFor(*connection).Run(command);
    if (result.exit_status != 0) {
      const std::string why = result.err.empty() ? fmt::format("exit {}", result.exit_status)
                                                 : result.err.substr(0, result.err.find('\n'));
      Fail(context, node.name,
           fmt::format("cannot read /etc/os-release or /usr/lib/os-release: {}", why));
      return;
    }
    const IdentifiedOs checked = CheckNodeOs(node.os, ParseOsReleaseFile(result.out));
    if (!checked.os) {
      Fail(context, node.name, checked.error);
      return;
    }
    context.SetNodeOs(node.name, *checked.os);
  }

  // As connect fails an unreachable node: nothing more runs there, and the
  // session goes so that no later phase can send it a script by mistake.
  static void Fail(RunContext& context, const std::string& node, const std::string& error) {
    context.FailNode(node, error);
    context.DropConnection(node);
    context.reporter.NodeFailed(node, error);
    context.plan.MarkUnreachable(node, error);
  }
};

}  // namespace

std::unique_ptr<Phase> MakeIdentifyPhase() { return std::make_unique<IdentifyPhase>(); }

}  // namespace gpuctl
