// FakeTransport: an in-memory Transport for unit tests, as ninja's tests use a
// fake CommandRunner. Each node answers scripts from a table of handlers and
// every script it was asked to run is recorded, so a test can assert exactly
// which commands crossed the transport (e.g. that plan sent no change).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuctl/transport/transport.h"

namespace gpuctl {

class FakeTransport : public Transport {
 public:
  // Decides the result of a script on a node; return nullopt to fall through
  // to the next handler. With no handler matching, the result is exit 0.
  using Handler =
      std::function<std::optional<CommandResult>(const std::string& node, const Command&)>;

  struct Record {
    std::string node;
    Command command;
  };

  void AddHandler(Handler handler);
  // Sees each probe batch whole, before it is taken apart entry by entry
  // for the handlers (return nullopt to let that happen). For fake nodes
  // that know each entry by its id (probe_batch.h's BatchEntryIds): taking
  // a batch apart costs more than the gpuctl work the scale benchmark
  // measures. Such a batch's entries are not recorded one by one. A node
  // that owes a reboot (a pending-reboot mark) has its batches taken apart.
  void SetBatchHandler(Handler handler);
  // Shorthand: any script on `node` ("*" for all) containing `needle` exits
  // with `exit_status` and prints `out`.
  void When(const std::string& node, const std::string& needle, int exit_status,
            const std::string& out = "");
  // Connecting to `node` throws TransportError(kind).
  void Unreachable(const std::string& node, ConnectFailure kind = ConnectFailure::kUnreachable);

  // `node` restarts: every session open to it fails at its next command.
  void Restart(const std::string& node);

  std::unique_ptr<Connection> Connect(const Endpoint& endpoint) override;

  // Off: commands are answered but not recorded (a benchmark of thousands of
  // nodes would otherwise measure the record). On by default.
  void KeepRecords(bool keep);

  [[nodiscard]] std::vector<Record> Records() const;
  [[nodiscard]] std::vector<Record> RecordsFor(const std::string& node) const;
  [[nodiscard]] int Connects(const std::string& node) const;

 private:
  friend class FakeConnection;
  CommandResult Answer(const std::string& node, const Command& command);
  // By value: each takes the command apart or rewrites it, and a benchmark
  // of thousands of nodes would otherwise measure copies of its environment.
  CommandResult AnswerOne(const std::string& node, Command command);
  CommandResult AnswerScript(const std::string& node, Command command);
  [[nodiscard]] int Boot(const std::string& node) const;

  mutable std::mutex mutex_;
  // Replaced, never changed in place: a command takes the current list
  // under the lock and runs the handlers outside it, without copying them.
  std::shared_ptr<const std::vector<Handler>> handlers_ =
      std::make_shared<const std::vector<Handler>>();
  std::shared_ptr<const Handler> batch_handler_;
  std::map<std::string, ConnectFailure> unreachable_;
  std::map<std::string, int> connects_;
  std::map<std::string, int> boots_;                             // restarts so far, per node
  std::map<std::string, std::set<std::string>> pending_reboot_;  // /run/gpuctl-reboot-pending
  std::vector<Record> records_;
  bool keep_records_ = true;
};

}  // namespace gpuctl
