// Running one Command on a channel of an authenticated libssh session.
//
// The channel runs `sh -s` (through sudo when the endpoint becomes root) and
// everything the command needs travels on stdin: env exports, then the script.
// One loop feeds stdin and drains stdout and stderr together, so a command that
// fills one stream while we wait on the other cannot stall.
#include "ssh_channel.h"

#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>

namespace gpuctl::ssh {
namespace {

using Clock = std::chrono::steady_clock;

// sudo -S reads a password line only when it needs one: not for NOPASSWD
// rules or cached credentials. An unread password line would reach the root
// shell as a command and be echoed back in an error message, so the root shell
// first skips input up to this marker. It starts with '#', so any copy the
// shell does see is a comment. Three copies because a wrong password makes sudo
// read more lines as retries (passwd_tries defaults to 3): the retries then
// consume markers, not the env exports that follow.
constexpr const char* kSudoSync = "#gpuctl-sudo-sync";
constexpr int kSudoSyncCopies = 3;

// The poll granularity when nothing happens. It bounds the cost of the rare
// case where libssh has already pulled data off the socket we poll, while
// keeping idle long-running commands at a few wake-ups a second.
constexpr std::chrono::milliseconds kIdleWait{100};
constexpr size_t kWriteChunk = size_t{32} * 1024;

struct ChannelDeleter {
  void operator()(ssh_channel channel) const { ssh_channel_free(channel); }
};
using ChannelPtr = std::unique_ptr<ssh_channel_struct, ChannelDeleter>;

bool IsNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }

bool ValidEnvName(const std::string& name) {
  return !name.empty() && IsNameStart(name.front()) &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); });
}

std::string RemoteCommand(const Endpoint& endpoint) {
  if (!endpoint.become) {
    return "sh -s";
  }
  if (endpoint.become_password.empty()) {
    return "sudo -n sh -s";
  }
  return "sudo -S -p '' sh -c " + ShellQuote(std::string("while IFS= read -r l; do [ \"$l\" = \"") +
                                             kSudoSync + "\" ] && exec sh -s; done; exit 125");
}

// Everything the remote side reads on stdin. Returns false with `problem` set
// when the command cannot be expressed safely (the values are never quoted in
// the message: they may be secrets).
bool BuildInput(const Endpoint& endpoint, const Command& command, std::string& input,
                std::string& problem) {
  if (endpoint.become && !endpoint.become_password.empty()) {
    if (endpoint.become_password.find_first_of("\r\n", 0) != std::string::npos) {
      problem = "the become password contains a line break; sudo -S cannot read it";
      return false;
    }
    input += endpoint.become_password + "\n";
    for (int i = 0; i < kSudoSyncCopies; ++i) {
      input += std::string(kSudoSync) + "\n";
    }
  }
  for (const auto& [name, value] : command.env) {
    if (!ValidEnvName(name)) {
      problem = "invalid environment variable name '" + name + "'";
      return false;
    }
    if (value.find('\0') != std::string::npos) {
      problem = "the value of " + name + " contains a NUL byte, which a shell cannot hold";
      return false;
    }
    input += EnvAssignment(name, value);
  }
  if (!command.prelude.empty()) {
    input += command.prelude;
    input += kStepMark;
  }
  input += command.script;
  return true;
}

bool SessionDead(ssh_session session) {
  return ssh_is_connected(session) == 0 ||
         (ssh_get_status(session) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0;
}

// Appends what the channel has buffered on one stream; -1 on a channel error.
// Reading also lets libssh handle newly arrived packets and reopen the window.
long Drain(ssh_channel channel, int is_stderr, std::string& sink) {
  std::array<char, size_t{64} * 1024> buffer{};
  long total = 0;
  for (;;) {
    const int n = ssh_channel_read_nonblocking(channel, buffer.data(),
                                               static_cast<uint32_t>(buffer.size()), is_stderr);
    if (n == SSH_ERROR) {
      return -1;
    }
    if (n <= 0) {  // 0: nothing buffered now; SSH_EOF: the stream has ended
      return total;
    }
    sink.append(buffer.data(), static_cast<size_t>(n));
    total += n;
  }
}

// The exit status if it has arrived, else -1. ssh_channel_get_exit_status
// waits for the status in a blocking session; in non-blocking mode it only
// handles packets that have already arrived, which is what the pump wants.
int ExitStatusSoFar(ssh_session session, ssh_channel channel) {
  ssh_set_blocking(session, 0);
  const int status = ssh_channel_get_exit_status(channel);
  ssh_set_blocking(session, 1);
  return status;
}

// The last line of `err` when every line of it is sudo's own ("sudo: ...",
// "Sorry, ...", "... is not in the sudoers file"), else empty: when sudo
// refuses, nothing else runs, so a script's own failure (which prints other
// lines too) is not taken for sudo's.
std::string SudoSaid(const std::string& err) {
  std::string said;
  std::size_t start = 0;
  while (start < err.size()) {
    std::size_t end = err.find('\n', start);
    if (end == std::string::npos) {
      end = err.size();
    }
    const std::string line = err.substr(start, end - start);
    start = end + 1;
    if (line.empty()) {
      continue;
    }
    if (!line.starts_with("sudo: ") && !line.starts_with("Sorry, ") &&
        line.find(" is not in the sudoers file") == std::string::npos) {
      return "";
    }
    said = line;
  }
  return said;
}

// Where the become password came from, for messages (never the value).
std::string PasswordSource(const Endpoint& endpoint) {
  return endpoint.become_password_env.empty()
             ? "the become password"
             : "the become password in $" + endpoint.become_password_env;
}

enum class Ending { kFinished, kTimedOut, kFailed };

Ending Pump(ssh_session session, ssh_channel channel, const std::string& input,
            Clock::time_point deadline, CommandResult& result) {
  size_t sent = 0;
  bool eof_sent = false;
  for (;;) {
    bool progress = false;
    if (sent < input.size()) {
      // Never more than the remote window: a write that had to wait for the
      // window would stop us draining output, and a command that prints before
      // it has read all its input would then deadlock with us.
      const size_t window = ssh_channel_window_size(channel);
      if (window > 0) {
        const size_t chunk = std::min({input.size() - sent, window, kWriteChunk});
        const int n = ssh_channel_write(channel, input.data() + sent, static_cast<uint32_t>(chunk));
        if (n < 0) {
          if (SessionDead(session)) {
            return Ending::kFailed;
          }
          sent = input.size();  // the command stopped reading (it exited early)
          eof_sent = true;
        } else {
          sent += static_cast<size_t>(n);
          progress = n > 0;
        }
      }
    } else if (!eof_sent) {
      ssh_channel_send_eof(channel);  // a failure shows up as a closed channel or a dead session
      eof_sent = true;
    }

    const long out = Drain(channel, 0, result.out);
    const long err = Drain(channel, 1, result.err);
    if (out < 0 || err < 0 || SessionDead(session)) {
      return Ending::kFailed;
    }
    progress = progress || out > 0 || err > 0;
    if (ssh_channel_is_closed(channel) != 0) {
      return Ending::kFinished;
    }
    // All output read and the status known: the command is over, whether or
    // not the server's channel close has arrived yet.
    if (ssh_channel_is_eof(channel) != 0 && ExitStatusSoFar(session, channel) != -1) {
      return Ending::kFinished;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return Ending::kTimedOut;
    }
    if (!progress) {
      const auto wait = std::min<Clock::duration>(kIdleWait, deadline - now);
      pollfd pfd{ssh_get_fd(session), POLLIN, 0};
      poll(&pfd, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count()));
    }
  }
}

}  // namespace

std::string SudoRefusal(const Endpoint& endpoint, const CommandResult& result) {
  if (!endpoint.become || !result.out.empty()) {
    return "";
  }
  const std::string who = "sudo on " + endpoint.node + " ";
  const std::string user = "user " + endpoint.user;
  if (result.exit_status == 127 && result.err.find("sudo") != std::string::npos &&
      result.err.find("not found") != std::string::npos) {
    return "sudo is not installed on " + endpoint.node + ", so " + user + " cannot become root";
  }
  if (result.exit_status != 1) {
    return "";
  }
  const std::string said = SudoSaid(result.err);
  if (said.empty()) {
    return "";
  }
  // sudo 1.9 asks for the password before it looks at the rules, so a user
  // sudo does not allow at all also shows up here as a password problem.
  if (said.find("incorrect password attempt") != std::string::npos) {
    return who + "refused the password of " + user + ": " + PasswordSource(endpoint) +
           " is wrong (" + said + ")";
  }
  if (said.find("a password is required") != std::string::npos) {
    if (!endpoint.become_password_env.empty()) {
      return who + "asks " + user + " for a password, and $" + endpoint.become_password_env +
             " (ssh.become_password_env) is not set or empty";
    }
    return who + "asks " + user +
           " for a password: name a variable holding it with ssh.become_password_env, or "
           "give " +
           endpoint.user + " a NOPASSWD rule";
  }
  return who + "will not run commands as root for " + user + " (" + said + ")";
}

namespace {
// RunOnChannel without the line that explains a refusal by sudo.
CommandResult RunCommand(ssh_session session, const Endpoint& endpoint, const Command& command,
                         bool& session_lost);
}  // namespace

std::string CheckBecome(ssh_session session, const Endpoint& endpoint) {
  if (!endpoint.become) {
    return "";
  }
  Command probe;
  probe.script = "id -u\n";
  bool lost = false;
  const CommandResult result = RunCommand(session, endpoint, probe, lost);
  if (result.exit_status == 0 && result.out == "0\n") {
    return "";
  }
  if (std::string refusal = SudoRefusal(endpoint, result); !refusal.empty()) {
    return refusal;
  }
  std::string err = result.err;
  while (!err.empty() && err.back() == '\n') {
    err.pop_back();
  }
  err = err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
  return "cannot become root through sudo as user " + endpoint.user + " on " + endpoint.node +
         ": `id -u` exited " + std::to_string(result.exit_status) + " printing '" +
         result.out.substr(0, result.out.find('\n')) + "'" + (err.empty() ? "" : ": " + err);
}

CommandResult RunOnChannel(ssh_session session, const Endpoint& endpoint, const Command& command,
                           bool& session_lost) {
  CommandResult result = RunCommand(session, endpoint, command, session_lost);
  // sudo's own words do not say where or who; the last line (the one
  // reports show) does.
  if (const std::string refusal = SudoRefusal(endpoint, result); !refusal.empty()) {
    result.err += "gpuctl: " + refusal + "\n";
  }
  return result;
}

namespace {

CommandResult RunCommand(ssh_session session, const Endpoint& endpoint, const Command& command,
                         bool& session_lost) {
  const auto start = Clock::now();
  CommandResult result;
  auto finish = [&]() {
    result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return result;
  };

  std::string input;
  std::string problem;
  if (!BuildInput(endpoint, command, input, problem)) {
    result.err = "gpuctl: not run on " + endpoint.node + ": " + problem + "\n";
    return finish();
  }
  const std::chrono::seconds timeout =
      command.timeout.count() > 0 ? command.timeout : endpoint.command_timeout;
  const Clock::time_point deadline =
      timeout.count() > 0 ? start + timeout : Clock::time_point::max();

  ChannelPtr channel(ssh_channel_new(session));
  if (channel == nullptr || ssh_channel_open_session(channel.get()) != SSH_OK ||
      ssh_channel_request_exec(channel.get(), RemoteCommand(endpoint).c_str()) != SSH_OK) {
    session_lost = SessionDead(session);
    result.err =
        "gpuctl: cannot start a command on " + endpoint.node + ": " + ssh_get_error(session) + "\n";
    return finish();
  }

  switch (Pump(session, channel.get(), input, deadline, result)) {
    case Ending::kFinished:
      result.exit_status = ssh_channel_get_exit_status(channel.get());
      if (result.exit_status < 0) {
        result.exit_status = -1;
        result.err += "gpuctl: the command on " + endpoint.node +
                      " ended without an exit status (killed by a signal?)\n";
      }
      break;
    case Ending::kTimedOut:
      // Best effort: sshd (OpenSSH >= 7.9) forwards the signal to the remote
      // shell; processes it started may outlive it. Closing the channel frees
      // the session for the next command either way.
      ssh_channel_request_send_signal(channel.get(), "TERM");
      ssh_channel_close(channel.get());
      result.timed_out = true;
      result.exit_status = -1;
      result.err += "gpuctl: timed out after " + std::to_string(timeout.count()) + " s on " +
                    endpoint.node + "; sent TERM and closed the channel\n";
      break;
    case Ending::kFailed:
      session_lost = SessionDead(session);
      result.exit_status = -1;
      result.err += std::string("gpuctl: ") +
                    (session_lost ? "lost the connection to " : "channel failed on ") +
                    endpoint.node + " mid-command: " + ssh_get_error(session) + "\n";
      break;
  }
  return finish();
}

}  // namespace

SigpipeGuard::SigpipeGuard() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  was_blocked_ = sigismember(&old_, SIGPIPE) == 1;
}

SigpipeGuard::~SigpipeGuard() {
  if (was_blocked_) {
    return;
  }
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    const timespec no_wait{};
    sigtimedwait(&pipe, nullptr, &no_wait);
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

}  // namespace gpuctl::ssh
