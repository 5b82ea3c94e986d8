#include "gpuctl/transport/fake_transport.h"

#include "gpuctl/run/probe_batch.h"
#include "gpuctl/run/prober.h"

namespace gpuctl {

class FakeConnection : public Connection {
 public:
  FakeConnection(FakeTransport& transport, std::string node, int boot)
      : transport_(transport), node_(std::move(node)), boot_(boot) {}
  CommandResult Run(const Command& command) override {
    // As an SSH session behaves once its node restarted: alive until used.
    if (transport_.Boot(node_) != boot_) {
      lost_ = true;
      CommandResult result;
      result.err = "gpuctl: cannot start a command on " + node_ + ": Socket error: disconnected\n";
      return result;
    }
    return transport_.Answer(node_, command);
  }
  [[nodiscard]] bool Alive() const override { return !lost_; }

 private:
  FakeTransport& transport_;
  std::string node_;
  int boot_;
  bool lost_ = false;
};

void FakeTransport::AddHandler(Handler handler) {
  std::lock_guard lock(mutex_);
  auto handlers = std::make_shared<std::vector<Handler>>(*handlers_);
  handlers->push_back(std::move(handler));
  handlers_ = std::move(handlers);
}

void FakeTransport::SetBatchHandler(Handler handler) {
  std::lock_guard lock(mutex_);
  batch_handler_ = std::make_shared<const Handler>(std::move(handler));
}

void FakeTransport::When(const std::string& node, const std::string& needle, int exit_status,
                         const std::string& out) {
  AddHandler([=](const std::string& n, const Command& c) -> std::optional<CommandResult> {
    if ((node != "*" && n != node) || c.script.find(needle) == std::string::npos) {
      return std::nullopt;
    }
    CommandResult r;
    r.exit_status = exit_status;
    r.out = out;
    return r;
  });
}

void FakeTransport::Unreachable(const std::string& node, ConnectFailure kind) {
  std::lock_guard lock(mutex_);
  unreachable_[node] = kind;
}

std::unique_ptr<Connection> FakeTransport::Connect(const Endpoint& endpoint) {
  std::lock_guard lock(mutex_);
  ++connects_[endpoint.node];
  if (auto it = unreachable_.find(endpoint.node); it != unreachable_.end()) {
    throw TransportError(it->second, endpoint.node + ": unreachable (fake)");
  }
  return std::make_unique<FakeConnection>(*this, endpoint.node, boots_[endpoint.node]);
}

void FakeTransport::Restart(const std::string& node) {
  std::lock_guard lock(mutex_);
  ++boots_[node];
  pending_reboot_.erase(node);
}

int FakeTransport::Boot(const std::string& node) const {
  std::lock_guard lock(mutex_);
  auto it = boots_.find(node);
  return it == boots_.end() ? 0 : it->second;
}

CommandResult FakeTransport::Answer(const std::string& node, const Command& command) {
  std::shared_ptr<const Handler> batch_handler;
  {
    // Not where a reboot is owed: the entries' pending-reboot checks
    // (prober.h) are answered from what this transport keeps.
    std::lock_guard lock(mutex_);
    const auto owed = pending_reboot_.find(node);
    if (owed == pending_reboot_.end() || owed->second.empty()) {
      batch_handler = batch_handler_;
    }
  }
  if (batch_handler) {
    if (auto whole = (*batch_handler)(node, command)) {
      return *whole;
    }
  }
  // A batch is answered entry by entry, as a node's shell runs each entry in
  // its own subshell: tests see (and script) individual probes either way.
  std::string nonce;
  std::vector<BatchEntry> entries;
  if (ParseBatchScript(command.script, nonce, entries)) {
    CommandResult batch;
    batch.exit_status = 0;
    for (auto& entry : entries) {
      Command single;
      single.script = std::move(entry.script);
      single.env = std::move(entry.env);
      AppendBatchResult(nonce, entry.id, AnswerOne(node, std::move(single)), batch.out, batch.err);
    }
    return batch;
  }
  return AnswerOne(node, command);
}

CommandResult FakeTransport::AnswerOne(const std::string& node, Command command) {
  // A verdict script is a probe then, if it passed, a verification: each is
  // answered (and recorded) on its own, as the node's shell would run them.
  if (std::string probe, verify; ParseVerdictScript(command.script, probe, verify)) {
    Command verification;
    verification.prelude = command.prelude;
    verification.timeout = command.timeout;
    verification.script = std::move(verify);
    command.script = std::move(probe);
    // One copy of the environment, for the verification; the probe takes
    // the command's own.
    std::map<std::string, std::string> env = command.env;
    CommandResult probed = AnswerScript(node, std::move(command));
    if (probed.exit_status != 0) {
      return probed;
    }
    verification.env = std::move(env);
    return VerdictResult(probed, AnswerScript(node, std::move(verification)));
  }
  return AnswerScript(node, std::move(command));
}

CommandResult FakeTransport::AnswerScript(const std::string& node, Command command) {
  // gpuctl's own pending-reboot bookkeeping in /run (prober.h) is kept here
  // as a node keeps it; the step's script after the check goes to handlers.
  std::shared_ptr<const std::vector<Handler>> handlers;
  {
    std::lock_guard lock(mutex_);
    if (keep_records_) {
      records_.push_back({node, command});
    }
    std::string step;
    if (ParsePendingRebootMark(command.script, step)) {
      pending_reboot_[node].insert(step);
      CommandResult marked;
      marked.exit_status = 0;
      return marked;
    }
    if (command.script.rfind("touch /run/gpuctl-reboot-marker", 0) == 0) {
      pending_reboot_.erase(node);  // the reboot that follows empties /run
    }
    if (std::string rest; ParsePendingRebootCheck(command.script, step, rest)) {
      if (pending_reboot_[node].count(step) != 0) {
        CommandResult pending;
        pending.exit_status = kProbeNeedsChange;
        pending.out = "reboot pending\n";
        return pending;
      }
      command.script = std::move(rest);
      if (keep_records_) {
        records_.back().command.script = command.script;
      }
    }
    handlers = handlers_;
  }
  // Newest handler first, so a test can override an earlier default.
  for (auto it = handlers->rbegin(); it != handlers->rend(); ++it) {
    if (auto result = (*it)(node, command)) {
      return *result;
    }
  }
  CommandResult ok;
  ok.exit_status = 0;
  return ok;
}

void FakeTransport::KeepRecords(bool keep) {
  std::lock_guard lock(mutex_);
  keep_records_ = keep;
}

std::vector<FakeTransport::Record> FakeTransport::Records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::vector<FakeTransport::Record> FakeTransport::RecordsFor(const std::string& node) const {
  std::lock_guard lock(mutex_);
  std::vector<Record> out;
  for (const auto& r : records_) {
    if (r.node == node) {
      out.push_back(r);
    }
  }
  return out;
}

int FakeTransport::Connects(const std::string& node) const {
  std::lock_guard lock(mutex_);
  auto it = connects_.find(node);
  return it == connects_.end() ? 0 : it->second;
}

}  // namespace gpuctl
