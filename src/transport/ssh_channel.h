// Internal to the SSH transport: running one Command on a channel of an
// already authenticated libssh session (ssh_channel.cpp), shared with
// ssh_transport.cpp, which owns sessions.
#pragma once

#include <libssh/libssh.h>
#include <signal.h>

#include <string>

#include "gpuctl/util/shell_quote.h"

#include "gpuctl/transport/transport.h"

namespace gpuctl::ssh {

using gpuctl::ShellQuote;

// Runs `command` on a new channel of `session` and closes the channel. Sets
// `session_lost` (and returns exit_status -1 with the reason in err) when the
// session itself died, e.g. the node rebooted mid-command.
CommandResult RunOnChannel(ssh_session session, const Endpoint& endpoint, const Command& command,
                           bool& session_lost);

// Why sudo would not run a command as root for the endpoint's user, naming
// the node and the user, from what sudo printed; empty when `result` is not a
// refusal by sudo (or the endpoint does not become root).
std::string SudoRefusal(const Endpoint& endpoint, const CommandResult& result);

// For an endpoint that becomes root: runs `id -u` through sudo once and says
// what is wrong when it does not print 0 (empty when all is well), so a wrong
// or missing password stops the node at connect with one clear message
// instead of failing every later command.
std::string CheckBecome(ssh_session session, const Endpoint& endpoint);

// libssh writes to a ProxyCommand's socketpair with write(2), which raises
// SIGPIPE if the proxy died and would kill the whole process. This blocks
// SIGPIPE for the calling thread only and discards any SIGPIPE raised meanwhile,
// so EPIPE reaches libssh as an ordinary error without touching process-wide
// signal dispositions the CLI may rely on.
class SigpipeGuard {
 public:
  SigpipeGuard();
  ~SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_{};
  bool was_blocked_ = false;
};

}  // namespace gpuctl::ssh
