// Transport: how gpuctl runs a script on a node.
//
// The executor and the planner only ever see these two interfaces. The real
// implementation is SSH (ssh_transport.h: one libssh session per node, each
// command a channel on it); unit tests use FakeTransport (fake_transport.h),
// which records every script it is asked to run.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "gpuctl/model/inventory.h"

namespace gpuctl {

struct CommandResult {
  int exit_status = -1;  // -1 when the command never produced one
  std::string out;
  std::string err;
  bool timed_out = false;
  std::chrono::milliseconds duration{0};
};

// Where and how to connect: resolved from a Node's SshSettings.
struct Endpoint {
  std::string node;  // inventory name, for messages
  std::string host;
  int port = 22;
  std::string user = "root";
  std::string identity_file;
  std::string known_hosts;
  std::string jump_host;
  bool trust_on_first_use = false;  // accept and record an unknown host key once
  bool become = false;
  std::string become_password;      // resolved from the environment; never logged
  std::string become_password_env;  // the variable it came from, for messages
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds command_timeout{1800};

  static Endpoint For(const Node& node);
};

// Why a connection failed, so callers can tell "retry later" (the node is
// rebooting) from "an admin must act" (host key changed, auth refused).
enum class ConnectFailure {
  kUnreachable,
  kTimeout,
  kHostKeyChanged,
  kHostKeyUnknown,
  kAuth,
  kOther
};

class TransportError : public std::runtime_error {
 public:
  TransportError(ConnectFailure kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  [[nodiscard]] ConnectFailure kind() const { return kind_; }

 private:
  ConnectFailure kind_;
};

// The longest value exported to a script's environment. Linux starts no
// program whose environment holds one string over 128 KiB (MAX_ARG_STRLEN):
// exported, a longer value (every node's hosts line on a cluster of some
// thousands) would make every command of the script fail with "Argument list
// too long". It is set as a shell variable instead, which the script reads
// and the programs it starts do not see (pass it to them on stdin or in a
// file).
inline constexpr std::size_t kMaxExportedValue = 64 * 1024;

// The line of shell that sets `name` to `value` before a script: exported,
// or for a value over kMaxExportedValue a shell variable only.
std::string EnvAssignment(const std::string& name, const std::string& value);

// What separates the prelude from the script on the wire.
inline constexpr std::string_view kStepMark = "\n# --- step ---\n";

// A script to run on the node. The script is fed to `sh -s` on stdin, so it
// never appears in the node's process list and needs no quoting; `env` is
// set before it (EnvAssignment; secrets travel this way, never on a command
// line).
struct Command {
  // The catalog's prelude (shell functions every step uses), sent before
  // `script` with kStepMark between them. Kept apart so that no command
  // copies it: it is tens of KiB and travels with every command. A view of
  // the catalog's own text, which outlives every command.
  std::string_view prelude;
  std::string script;
  std::map<std::string, std::string> env;
  std::chrono::seconds timeout{0};  // 0: the endpoint's command timeout
};

// One open connection to one node. Not thread-safe: one thread drives a node.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual CommandResult Run(const Command& command) = 0;
  [[nodiscard]] virtual bool Alive() const = 0;
  // The node's host key as this connection verified it ("ssh-ed25519
  // AAAA..."), or "" where the transport has none to tell.
  [[nodiscard]] virtual std::string HostKey() const { return ""; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Throws TransportError when the node cannot be reached or trusted.
  virtual std::unique_ptr<Connection> Connect(const Endpoint& endpoint) = 0;
};

}  // namespace gpuctl
