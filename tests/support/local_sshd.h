// LocalSshd: a real OpenSSH server on 127.0.0.1 for tests of the SSH
// transport, with a throwaway host key, client key and known_hosts file in a
// temporary directory that is removed afterwards.
//
// It runs `/usr/sbin/sshd -D -e -f <dir>/sshd_config` as a child process on an
// ephemeral port, so it needs root (sshd's privilege separation); tests call
// LocalSshd::Unavailable() first and skip with the reason it gives.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gpuctl/transport/transport.h"

namespace gpuctl::test {

class LocalSshd {
 public:
  // Empty when a LocalSshd can run here; otherwise why not (for GTEST_SKIP).
  static std::string Unavailable();

  // Creates the directory, keys and config; does not start the server.
  LocalSshd();
  ~LocalSshd();
  LocalSshd(const LocalSshd&) = delete;
  LocalSshd& operator=(const LocalSshd&) = delete;

  // Adds a line to sshd_config; takes effect at the next Start().
  void AddConfig(const std::string& line);
  // Sets a variable (no spaces in the value) in every session's environment;
  // takes effect at the next Start(). HOME is the temporary directory, so the
  // server account's own shell startup files (~/.bashrc) never run in tests.
  void SetSessionEnv(const std::string& name, const std::string& value);
  // Starts sshd (on the same port as before when restarted) and returns once
  // it accepts TCP connections. Throws std::runtime_error, with sshd's log, if
  // it does not within `deadline`.
  void Start(std::chrono::seconds deadline = std::chrono::seconds(10));
  // Stops sshd and every session process it started.
  void Stop();
  // Kills sshd's session processes (and what they run), leaving the listener:
  // to clients this looks like the node dropping their connections.
  void KillSessions();
  // Replaces the host key (as a reinstalled node would); restart to use it.
  void RegenerateHostKey();
  // Writes the current host key into known_hosts(), replacing its content.
  void TrustHostKey() const;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] const std::string& dir() const { return dir_; }
  [[nodiscard]] std::string client_key() const { return dir_ + "/client_key"; }
  [[nodiscard]] std::string known_hosts() const { return dir_ + "/known_hosts"; }
  // "SHA256:..." of the current host key, as ssh-keygen -l prints it.
  [[nodiscard]] std::string HostKeyFingerprint() const;
  // sshd's log (stderr) so far; and how many lines contain `needle`.
  [[nodiscard]] std::string Log() const;
  [[nodiscard]] int CountInLog(const std::string& needle) const;
  // Pids of every live process below the listener.
  [[nodiscard]] std::vector<pid_t> Descendants() const;
  // Whether a process named `comm` (as in /proc/PID/comm) runs below sshd.
  [[nodiscard]] bool Runs(const std::string& comm) const;

  // An Endpoint for this server: root@127.0.0.1:port, with client_key() and
  // known_hosts(), short timeouts.
  [[nodiscard]] Endpoint MakeEndpoint(const std::string& node = "local") const;

 private:
  void WriteConfig() const;

  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::vector<std::string> extra_config_;
  std::map<std::string, std::string> session_env_;
};

// Runs argv (argv[0] a full path) and waits; returns its exit status, or -1.
// Its stdout goes to `out` when given, stderr to /dev/null.
int RunTool(const std::vector<std::string>& argv, std::string* out = nullptr);

}  // namespace gpuctl::test
