#include "gpuctl/run/drainer.h"

#include <fmt/format.h>

#include "gpuctl/run/failure_text.h"
#include "gpuctl/run/script_runner.h"

namespace gpuctl {
namespace {

// What a drain's script may take beyond the drain's own timeout: the
// connection, kubectl's start, the resume's wait for an API server that
// has just come back from its own node's reboot.
constexpr std::chrono::seconds kScriptSlack{120};
constexpr std::chrono::seconds kMemberTimeout{60};

}  // namespace

Drainer::Drainer(const Inventory& inventory, const Catalog& catalog, Transport& transport,
                 Reporter& reporter, const Redactor& redactor, DrainOptions options)
    : inventory_(inventory),
      catalog_(catalog),
      transport_(transport),
      reporter_(reporter),
      redactor_(redactor),
      options_(std::move(options)),
      holders_(inventory.RoleHolders()) {}

const Node* Drainer::Holder(const Drain& drain) const {
  auto held = holders_.find(drain.on);
  return held == holders_.end() || held->second.empty() ? nullptr : held->second.front();
}

bool Drainer::Applies(const Node& node) const {
  const Drain* drain = catalog_.DrainFor(node, inventory_);
  return drain != nullptr && Holder(*drain) != nullptr;
}

std::string Drainer::RunsOn(const Node& node) const {
  const Drain* drain = catalog_.DrainFor(node, inventory_);
  const Node* holder = drain == nullptr ? nullptr : Holder(*drain);
  return holder == nullptr ? "" : holder->name;
}

std::map<std::string, std::string> Drainer::Environment(const Node& node) const {
  return {{std::string(kDrainNodeVariable), node.name},
          {std::string(kDrainTimeoutVariable), std::to_string(options_.timeout.count())},
          {std::string(kDrainReasonVariable), options_.reason}};
}

CommandResult Drainer::Run(const Node& node, const std::string Drain::*script,
                           const std::string& step, std::string& why) {
  const Drain* drain = catalog_.DrainFor(node, inventory_);
  const Node* holder = drain == nullptr ? nullptr : Holder(*drain);
  CommandResult result;
  if (holder == nullptr) {
    why = "no drain applies";
    return result;
  }
  Endpoint endpoint = Endpoint::For(*holder);
  endpoint.trust_on_first_use = options_.trust_new_host_keys;
  endpoint.command_timeout = options_.timeout + kScriptSlack;
  std::unique_ptr<Connection> connection;
  try {
    connection = transport_.Connect(endpoint);
  } catch (const TransportError& e) {
    why = fmt::format("cannot reach {} to ask it: {}", holder->name, e.what());
    return result;
  }
  ScriptRunner runner(*connection, reporter_, redactor_, catalog_.prelude());
  const std::map<std::string, std::string> env = Environment(node);
  result = runner.RunStep(node.name, step, Activity::kChange, drain->*script, env);
  if (result.exit_status < 0) {
    why = result.timed_out ? fmt::format("{} on {} timed out", step, holder->name)
                           : fmt::format("{} on {}: {}", step, holder->name,
                                         ExplainFailure(result.out, result.err, 3));
  }
  return result;
}

Drainer::Membership Drainer::IsMember(const Node& node, ScriptRunner& on_node, std::string& why) {
  const Drain* drain = catalog_.DrainFor(node, inventory_);
  if (drain == nullptr) {
    return Membership::kNotMember;
  }
  Command command;
  command.prelude = catalog_.prelude();
  command.script = drain->member;
  command.env = Environment(node);
  command.timeout = kMemberTimeout;
  const CommandResult result = on_node.Run(command);
  if (result.exit_status == 0) {
    return Membership::kMember;
  }
  if (result.exit_status == 1) {
    return Membership::kNotMember;
  }
  if (result.exit_status < 0) {
    why = fmt::format("cannot tell whether {} is a cluster member: {}", node.name,
                      result.timed_out ? "the question timed out" : "the node did not answer");
  } else {
    why = fmt::format("cannot tell whether {} is a cluster member: {}", node.name,
                      ExplainFailure(result.out, result.err, 3));
  }
  return Membership::kUnknown;
}

bool Drainer::DrainNode(const Node& node, std::string& why) {
  const CommandResult result = Run(node, &Drain::drain, "drain", why);
  if (result.exit_status == 0) {
    return true;
  }
  if (result.exit_status > 0) {
    why = ExplainFailure(result.out, result.err, 4);
  }
  return false;
}

bool Drainer::ResumeNode(const Node& node, std::string& why) {
  const CommandResult result = Run(node, &Drain::resume, "resume", why);
  if (result.exit_status == 0) {
    return true;
  }
  if (result.exit_status > 0) {
    why = ExplainFailure(result.out, result.err, 4);
  }
  return false;
}

}  // namespace gpuctl
