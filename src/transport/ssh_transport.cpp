// SshTransport over libssh 0.10: connecting, checking the host key and
// authenticating. Running commands on the session is in ssh_channel.cpp.
#include "gpuctl/transport/ssh_transport.h"

#include <libssh/libssh.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpuctl/util/input_file.h"
#include "ssh_channel.h"

namespace gpuctl {
namespace {

struct SessionDeleter {
  void operator()(ssh_session session) const {
    if (ssh_is_connected(session) != 0) {
      ssh_disconnect(session);
    }
    ssh_free(session);
  }
};
using SessionPtr = std::unique_ptr<ssh_session_struct, SessionDeleter>;

// Threads recording first-seen host keys append to one known_hosts file.
std::mutex& KnownHostsMutex() {
  static std::mutex mutex;
  return mutex;
}

std::string HomeDir() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found) {
    return found->pw_dir;
  }
  return "/";
}

std::string ExpandHome(const std::string& path) {
  return path.rfind("~/", 0) == 0 ? HomeDir() + path.substr(1) : path;
}

// libssh expands %d, %h, %p... in paths and the ProxyCommand.
std::string EscapePercent(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    escaped += c == '%' ? std::string("%%") : std::string(1, c);
  }
  return escaped;
}

std::string HostPort(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

// How known_hosts (and ssh-keygen -R) name the host.
std::string KnownHostsName(const Endpoint& e) {
  return e.port == 22 ? e.host : "[" + e.host + "]:" + std::to_string(e.port);
}

std::string Where(const Endpoint& e) {
  return "node " + e.node + " (" + e.user + "@" + HostPort(e.host, e.port) +
         (e.jump_host.empty() ? "" : " via " + e.jump_host) + ")";
}

std::string ErrnoText(int error) {
  std::array<char, 256> buffer{};
  // strerror_r has a GNU and an XSI form; these overloads accept either.
  struct Pick {
    static std::string From(const char* text, const char*) { return text; }
    static std::string From(int rc, const char* buffer) { return rc == 0 ? buffer : ""; }
  };
  return Pick::From(strerror_r(error, buffer.data(), buffer.size()), buffer.data());
}

// libssh reports connect failures only as text (strerror of the socket error,
// or its own phrases), so the kind is recovered from the message.
ConnectFailure Classify(const std::string& message) {
  auto has = [&](const std::string& text) {
    return !text.empty() && message.find(text) != std::string::npos;
  };
  if (has("Timeout connecting") || has(ErrnoText(ETIMEDOUT))) {
    return ConnectFailure::kTimeout;
  }
  for (int error : {ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, ENETDOWN, ECONNRESET}) {
    if (has(ErrnoText(error))) {
      return ConnectFailure::kUnreachable;
    }
  }
  if (has("Socket error: disconnected") || has("Failed to resolve hostname")) {
    return ConnectFailure::kUnreachable;
  }
  return ConnectFailure::kOther;
}

// Limitation: the jump host is reached with the OpenSSH client, not libssh, so
// its own ~/.ssh/config applies and its errors are not visible to us (libssh
// discards a ProxyCommand's stderr); a failure there reads as "disconnected".
// It checks the jump host's key against the same known_hosts file, with the
// same trust-on-first-use policy, and offers the same identity file.
std::string JumpCommand(const Endpoint& e, const std::string& known_hosts) {
  std::string user;
  std::string host = e.jump_host;
  std::string port;
  if (auto at = host.rfind('@'); at != std::string::npos) {
    user = host.substr(0, at);
    host = host.substr(at + 1);
  }
  if (!host.empty() && host.front() == '[') {  // [v6 address]:port
    const auto close = host.find(']');
    if (close != std::string::npos && close + 1 < host.size() && host[close + 1] == ':') {
      port = host.substr(close + 2);
    }
    host = host.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  } else if (const auto colon = host.find(':');
             colon != std::string::npos && host.find(':', colon + 1) == std::string::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (host.empty() || host.front() == '-' || (!user.empty() && user.front() == '-')) {
    throw TransportError(ConnectFailure::kOther,
                         Where(e) + ": invalid jump_host '" + e.jump_host + "'");
  }
  using ssh::ShellQuote;
  // The target is written literally rather than as %h:%p so that it is
  // shell-quoted like everything else.
  std::string command =
      "ssh -W " + ShellQuote(HostPort(e.host, e.port)) +
      " -o BatchMode=yes -o ConnectTimeout=" + std::to_string(e.connect_timeout.count()) +
      " -o UserKnownHostsFile=" + ShellQuote(known_hosts) +
      " -o StrictHostKeyChecking=" + (e.trust_on_first_use ? "accept-new" : "yes");
  if (!e.identity_file.empty()) {
    command += " -i " + ShellQuote(ExpandHome(e.identity_file));
  }
  if (!port.empty()) {
    command += " -p " + ShellQuote(port);
  }
  if (!user.empty()) {
    command += " -l " + ShellQuote(user);
  }
  return command + " " + ShellQuote(host);
}

void SetOption(ssh_session session, ssh_options_e option, const void* value, const Endpoint& e) {
  if (ssh_options_set(session, option, value) != SSH_OK) {
    throw TransportError(ConnectFailure::kOther,
                         Where(e) + ": invalid SSH setting: " + ssh_get_error(session));
  }
}

void Configure(ssh_session session, const Endpoint& e, const std::string& known_hosts) {
  SetOption(session, SSH_OPTIONS_HOST, e.host.c_str(), e);
  SetOption(session, SSH_OPTIONS_PORT, &e.port, e);
  SetOption(session, SSH_OPTIONS_USER, e.user.c_str(), e);
  if (e.connect_timeout.count() > 0) {
    const long seconds = static_cast<long>(e.connect_timeout.count());
    SetOption(session, SSH_OPTIONS_TIMEOUT, &seconds, e);
  }
  // Only our known_hosts counts and ~/.ssh/config is ignored, so a run behaves
  // the same whoever's account it runs from; unknown keys are never accepted
  // by libssh itself (StrictHostKeyChecking), only by VerifyHostKey.
  const bool process_config = false;
  SetOption(session, SSH_OPTIONS_PROCESS_CONFIG, &process_config, e);
  SetOption(session, SSH_OPTIONS_KNOWNHOSTS, EscapePercent(known_hosts).c_str(), e);
  SetOption(session, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null", e);
  const int strict = 1;
  SetOption(session, SSH_OPTIONS_STRICTHOSTKEYCHECK, &strict, e);
  if (!e.jump_host.empty()) {
    SetOption(session, SSH_OPTIONS_PROXYCOMMAND, EscapePercent(JumpCommand(e, known_hosts)).c_str(),
              e);
  }
}

// The option's number in Linux's uapi <linux/tcp.h> (6.15); the C library's
// headers on older systems do not name it.
#ifdef TCP_RTO_MAX_MS
constexpr int kTcpRtoMaxMs = TCP_RTO_MAX_MS;
#else
constexpr int kTcpRtoMaxMs = 44;
#endif

// A node that powers off without closing TCP would otherwise leave Run waiting
// out the whole command timeout. Failures are harmless: a ProxyCommand's
// socketpair is not TCP, and then the jump host's ssh notices instead.
//
// The 60 s without an acknowledgement is sized by TCP's retransmissions, not
// by the keepalives: when the link goes while a segment is unacknowledged
// (the tail of a script just sent), the kernel retries it 25.4 s and 51 s
// after sending (200 ms doubling), and gives up at the first retry past this
// limit. At 45 s a 30 s outage killed the connection although the link was
// back, because the 51 s retry never ran; at 60 s an outage of up to 51 s is
// ridden out either way, and a dead link is still found within a minute.
// Where the kernel lets a socket cap its retransmission timeout (Linux 6.15's
// TCP_RTO_MAX_MS), the retries come every 5 s once backed off, so the
// connection carries on within 5 s of the link's return instead of at the
// 51 s retry; older kernels refuse the option and keep their own schedule.
void EnableKeepalive(ssh_session session) {
  const int fd = ssh_get_fd(session);
  const int on = 1;
  const int idle_s = 15;
  const int interval_s = 5;
  const int probes = 3;
  const unsigned int unacked_ms = 60000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &unacked_ms, sizeof unacked_ms);
  const int rto_max_ms = 5000;
  setsockopt(fd, IPPROTO_TCP, kTcpRtoMaxMs, &rto_max_ms, sizeof rto_max_ms);
}

// "SHA256:... (ssh-ed25519)": OpenSSH's fingerprint form (ssh-keygen -l), so
// an admin can compare it with what the node's console shows.
std::string Fingerprint(ssh_key key) {
  std::string fingerprint = "(unknown fingerprint)";
  unsigned char* hash = nullptr;
  size_t length = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &length) == 0) {
    if (char* text = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, length)) {
      fingerprint = text;
      ssh_string_free_char(text);
    }
    ssh_clean_pubkey_hash(&hash);
  }
  if (const char* type = ssh_key_type_to_char(ssh_key_type(key)); type != nullptr) {
    fingerprint += std::string(" (") + type + ")";
  }
  return fingerprint;
}

std::string ServerFingerprint(ssh_session session) {
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(session, &key) != SSH_OK) {
    return "(unknown fingerprint)";
  }
  std::string fingerprint = Fingerprint(key);
  ssh_key_free(key);
  return fingerprint;
}

// The keys known_hosts records for the endpoint, as "SHA256:... (type) at
// file:line". libssh says only that the key changed: on a mismatch its
// known-hosts entry API hands back no entry, so the file is read here, a
// line at a time, and each line matched with libssh's own parser (which
// also matches hashed names).
std::vector<std::string> RecordedKeys(const Endpoint& e, const std::string& known_hosts) {
  // libssh looks hosts up by "host" on port 22, "[host]:port" otherwise, in
  // lower case.
  std::string name = KnownHostsName(e);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::vector<std::string> recorded;
  std::size_t number = 0;
  std::string why;
  ReadInputLines(
      known_hosts, kMaxKnownHostsBytes,
      [&](std::string_view line) {
        ++number;
        const std::size_t start = line.find_first_not_of(" \t");
        // Comments, blank lines and @cert-authority/@revoked markers hold no
        // plain host key.
        if (start == std::string_view::npos || line[start] == '#' || line[start] == '@') {
          return;
        }
        ssh_knownhosts_entry* entry = nullptr;
        if (ssh_known_hosts_parse_line(name.c_str(), std::string(line.substr(start)).c_str(),
                                       &entry) == SSH_OK &&
            entry != nullptr) {
          recorded.push_back(Fingerprint(entry->publickey) + " at " + known_hosts + ":" +
                             std::to_string(number));
        }
        SSH_KNOWNHOSTS_ENTRY_FREE(entry);
      },
      why);
  return recorded;
}

void VerifyHostKey(ssh_session session, const Endpoint& e, const std::string& known_hosts) {
  const std::string fingerprint = ServerFingerprint(session);
  const std::string forget =
      "ssh-keygen -R " + ssh::ShellQuote(KnownHostsName(e)) + " -f " + ssh::ShellQuote(known_hosts);
  std::lock_guard lock(KnownHostsMutex());
  switch (ssh_session_is_known_server(session)) {
    case SSH_KNOWN_HOSTS_OK:
      return;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER: {
      const std::vector<std::string> recorded = RecordedKeys(e, known_hosts);
      std::string was = "the key recorded for it in " + known_hosts;
      if (!recorded.empty()) {
        was = recorded.size() == 1 ? "the key recorded for it: " : "the keys recorded for it: ";
        for (std::size_t i = 0; i < recorded.size(); ++i) {
          was += (i == 0 ? "" : ", ") + recorded[i];
        }
      }
      throw TransportError(
          ConnectFailure::kHostKeyChanged,
          Where(e) + ": HOST KEY CHANGED. The node presented " + fingerprint +
              ", which does not match " + was +
              ". Someone may be intercepting the connection, or the node was reinstalled. "
              "Verify the new fingerprint on the node's console (ssh-keygen -lf "
              "/etc/ssh/ssh_host_*_key.pub); if the change is expected, remove the old key "
              "with `" +
              forget + "` and connect again with --trust-new-host-keys.");
    }
    case SSH_KNOWN_HOSTS_NOT_FOUND:
    case SSH_KNOWN_HOSTS_UNKNOWN:
      if (!e.trust_on_first_use) {
        throw TransportError(ConnectFailure::kHostKeyUnknown,
                             Where(e) + ": host key " + fingerprint + " is not in " + known_hosts +
                                 ". Check the fingerprint, then rerun with "
                                 "--trust-new-host-keys to record it.");
      }
      if (ssh_session_update_known_hosts(session) != SSH_OK) {
        throw TransportError(ConnectFailure::kOther, Where(e) + ": cannot record host key in " +
                                                         known_hosts + ": " +
                                                         ssh_get_error(session));
      }
      spdlog::warn("{}: trusted new host key {} (recorded in {})", Where(e), fingerprint,
                   known_hosts);
      return;
    default:
      throw TransportError(ConnectFailure::kOther, Where(e) + ": cannot check the host key in " +
                                                       known_hosts + ": " + ssh_get_error(session));
  }
}

enum class KeyResult { kAccepted, kRefused, kPartial, kUnreadable, kEncrypted, kBad, kError };

KeyResult FromAuth(int rc) {
  switch (rc) {
    case SSH_AUTH_SUCCESS:
      return KeyResult::kAccepted;
    case SSH_AUTH_PARTIAL:
      return KeyResult::kPartial;
    case SSH_AUTH_DENIED:
      return KeyResult::kRefused;
    default:
      return KeyResult::kError;
  }
}

// `why` says why a file was unreadable (kUnreadable).
KeyResult TryKeyFile(ssh_session session, const std::string& path, std::string& why) {
  // Read here rather than by libssh, so a FIFO or a device given as the
  // identity file is refused instead of blocking the connect.
  auto text = ReadInputFile(path, kMaxIdentityFileBytes, why);
  if (!text) {
    return KeyResult::kUnreadable;
  }
  // Without a callback OpenSSL would prompt on the terminal for an encrypted
  // PEM key; this one refuses, and notes that a passphrase was wanted.
  bool wanted_passphrase = false;
  auto refuse = [](const char*, char*, size_t, int, int, void* wanted) -> int {
    *static_cast<bool*>(wanted) = true;
    return -1;
  };
  ssh_key key = nullptr;
  const int rc =
      ssh_pki_import_privkey_base64(text->c_str(), nullptr, refuse, &wanted_passphrase, &key);
  // The private key's text is not left in freed memory.
  explicit_bzero(text->data(), text->size());
  if (rc != SSH_OK) {
    return wanted_passphrase ? KeyResult::kEncrypted : KeyResult::kBad;
  }
  const KeyResult result = FromAuth(ssh_userauth_publickey(session, nullptr, key));
  ssh_key_free(key);
  return result;
}

std::string Describe(KeyResult result, const std::string& why) {
  switch (result) {
    case KeyResult::kRefused:
      return "refused";
    case KeyResult::kPartial:
      return "accepted, but the server also wants another method";
    case KeyResult::kUnreadable:
      return why.empty() ? "missing or unreadable" : "unreadable: " + why;
    case KeyResult::kEncrypted:
      return "passphrase-protected: gpuctl cannot prompt; load it into ssh-agent and leave "
             "identity_file empty";
    case KeyResult::kBad:
      return "not a private key libssh can read";
    default:
      return "error";
  }
}

void Authenticate(ssh_session session, const Endpoint& e) {
  std::vector<std::string> tried;
  std::string why;  // why the key file last tried was unreadable
  auto check = [&](KeyResult result, const std::string& what) {
    if (result == KeyResult::kAccepted) {
      return true;
    }
    if (result == KeyResult::kError && ssh_is_connected(session) == 0) {
      throw TransportError(ConnectFailure::kUnreachable, Where(e) +
                                                             ": connection lost while "
                                                             "authenticating: " +
                                                             ssh_get_error(session));
    }
    tried.push_back(what + " (" + Describe(result, why) + ")");
    return false;
  };
  if (!e.identity_file.empty()) {
    const std::string path = ExpandHome(e.identity_file);
    if (check(TryKeyFile(session, path, why), path)) {
      return;
    }
  } else {
    if (const char* agent = std::getenv("SSH_AUTH_SOCK"); agent != nullptr && *agent != '\0') {
      if (check(FromAuth(ssh_userauth_agent(session, nullptr)), "ssh-agent")) {
        return;
      }
    }
    for (const char* name : {"id_ed25519", "id_ecdsa", "id_rsa"}) {
      const std::string path = HomeDir() + "/.ssh/" + name;
      if (access(path.c_str(), F_OK) == 0 && check(TryKeyFile(session, path, why), path)) {
        return;
      }
    }
  }
  std::string list;
  for (const auto& entry : tried) {
    list += (list.empty() ? "" : ", ") + entry;
  }
  if (list.empty()) {
    list = "nothing: no ssh-agent (SSH_AUTH_SOCK) and no ~/.ssh/id_ed25519, id_ecdsa or id_rsa";
  }
  throw TransportError(ConnectFailure::kAuth, Where(e) + ": authentication as " + e.user + "@" +
                                                  e.host + " failed; tried " + list);
}

class SshConnection : public Connection {
 public:
  SshConnection(Endpoint endpoint, SessionPtr session)
      : endpoint_(std::move(endpoint)),
        session_(std::move(session)),
        host_key_(ServerKeyLine(session_.get())) {}
  ~SshConnection() override {
    ssh::SigpipeGuard guard;
    session_.reset();
  }
  SshConnection(const SshConnection&) = delete;
  SshConnection& operator=(const SshConnection&) = delete;

  CommandResult Run(const Command& command) override {
    if (!Alive()) {
      lost_ = true;
      CommandResult result;
      result.err = "gpuctl: the connection to " + endpoint_.node + " is closed; reconnect\n";
      return result;
    }
    ssh::SigpipeGuard guard;
    return ssh::RunOnChannel(session_.get(), endpoint_, command, lost_);
  }

  [[nodiscard]] bool Alive() const override {
    return !lost_ && ssh_is_connected(session_.get()) != 0;
  }

  [[nodiscard]] std::string HostKey() const override { return host_key_; }

 private:
  // "type base64" of the key the server proved it holds, as known_hosts
  // and authorized_keys write keys.
  static std::string ServerKeyLine(ssh_session session) {
    ssh_key key = nullptr;
    if (ssh_get_server_publickey(session, &key) != SSH_OK) {
      return "";
    }
    std::string line;
    char* base64 = nullptr;
    if (ssh_pki_export_pubkey_base64(key, &base64) == SSH_OK && base64 != nullptr) {
      const char* type = ssh_key_type_to_char(ssh_key_type(key));
      line = std::string(type != nullptr ? type : "") + " " + base64;
      ssh_string_free_char(base64);
    }
    ssh_key_free(key);
    return line;
  }

  Endpoint endpoint_;
  SessionPtr session_;
  std::string host_key_;
  bool lost_ = false;
};

class SshTransport : public Transport {
 public:
  SshTransport() {
    // libssh 0.10 initialises itself from a library constructor when linked
    // dynamically, but a static build needs ssh_init() once, before sessions
    // are used from several threads ("Threading with libssh"). Sessions are
    // then independent as long as each is used by one thread at a time, which
    // the Connection contract already requires.
    static std::once_flag once;
    std::call_once(once, [] {
      if (ssh_init() != SSH_OK) {
        throw TransportError(ConnectFailure::kOther, "cannot initialise libssh");
      }
    });
  }

  std::unique_ptr<Connection> Connect(const Endpoint& endpoint) override {
    ssh::SigpipeGuard guard;
    const std::string known_hosts = endpoint.known_hosts.empty() ? HomeDir() + "/.ssh/known_hosts"
                                                                 : ExpandHome(endpoint.known_hosts);
    SessionPtr session(ssh_new());
    if (session == nullptr) {
      throw TransportError(ConnectFailure::kOther, Where(endpoint) + ": cannot create a session");
    }
    // libssh reads known_hosts itself and would spin on /dev/zero or wait on
    // a FIFO; a missing file is fine (the host is then unknown).
    if (const std::string why = CheckInputFile(known_hosts, kMaxKnownHostsBytes); !why.empty()) {
      throw TransportError(ConnectFailure::kOther,
                           Where(endpoint) + ": known_hosts " + known_hosts + ": " + why);
    }
    Configure(session.get(), endpoint, known_hosts);
    if (ssh_connect(session.get()) != SSH_OK) {
      const std::string error = ssh_get_error(session.get());
      throw TransportError(Classify(error), Where(endpoint) + ": cannot connect: " + error);
    }
    EnableKeepalive(session.get());
    VerifyHostKey(session.get(), endpoint, known_hosts);
    Authenticate(session.get(), endpoint);
    if (const std::string problem = ssh::CheckBecome(session.get(), endpoint); !problem.empty()) {
      throw TransportError(ConnectFailure::kAuth, Where(endpoint) + ": " + problem);
    }
    spdlog::debug("{}: connected", Where(endpoint));
    return std::make_unique<SshConnection>(endpoint, std::move(session));
  }
};

}  // namespace

std::unique_ptr<Transport> MakeSshTransport() { return std::make_unique<SshTransport>(); }

}  // namespace gpuctl
