#include "support/local_sshd.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace gpuctl::test {
namespace {

constexpr const char* kSshd = "/usr/sbin/sshd";
constexpr const char* kSshKeygen = "/usr/bin/ssh-keygen";

using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) {
    throw std::runtime_error("cannot write " + path);
  }
}

// Spawns argv with stdin from /dev/null, stdout to `out_path` (or /dev/null)
// and stderr to `err_path` (or /dev/null), appending.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path,
            const std::string& err_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.empty() ? "/dev/null" : out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.empty() ? "/dev/null" : err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

bool Accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

// Waits for `done` with short naps, up to `limit`.
template <typename Done>
bool WaitFor(Done done, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// pid -> (parent pid, comm) for every process, from /proc.
std::map<pid_t, std::pair<pid_t, std::string>> ProcessTable() {
  std::map<pid_t, std::pair<pid_t, std::string>> table;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const std::string stat = ReadFile(entry.path().string() + "/stat");
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) {
      continue;  // the process exited meanwhile
    }
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t parent = 0;
    rest >> state >> parent;
    if (state != "Z") {
      table[static_cast<pid_t>(std::stol(name))] = {parent,
                                                    stat.substr(open + 1, close - open - 1)};
    }
  }
  return table;
}

}  // namespace

int RunTool(const std::vector<std::string>& argv, std::string* out) {
  std::string out_path;
  if (out != nullptr) {
    char name[] = "/tmp/gpuctl-tool-XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) {
      return -1;
    }
    close(fd);
    out_path = name;
  }
  const pid_t pid = Spawn(argv, out_path, "");
  int status = 0;
  const bool waited = pid > 0 && waitpid(pid, &status, 0) == pid;
  if (out != nullptr) {
    *out = ReadFile(out_path);
    std::filesystem::remove(out_path);
  }
  return waited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string LocalSshd::Unavailable() {
  if (access(kSshd, X_OK) != 0) {
    return std::string(kSshd) + " is not installed";
  }
  if (access(kSshKeygen, X_OK) != 0) {
    return std::string(kSshKeygen) + " is not installed";
  }
  if (geteuid() != 0) {
    return "sshd needs root (privilege separation); run the tests as root";
  }
  // sshd's privilege-separation directory; missing where sshd never ran.
  if (mkdir("/run/sshd", 0755) != 0 && errno != EEXIST) {
    return "cannot create /run/sshd";
  }
  return "";
}

LocalSshd::LocalSshd() {
  char name[] = "/tmp/gpuctl-sshd-XXXXXX";
  if (mkdtemp(name) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  dir_ = name;
  for (const char* key : {"host_key", "client_key"}) {
    if (RunTool({kSshKeygen, "-q", "-t", "ed25519", "-N", "", "-C", key, "-f", dir_ + "/" + key}) !=
        0) {
      throw std::runtime_error(std::string("ssh-keygen failed for ") + key);
    }
  }
  WriteFile(dir_ + "/authorized_keys", ReadFile(client_key() + ".pub"));
  session_env_["HOME"] = dir_;
}

LocalSshd::~LocalSshd() {
  Stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void LocalSshd::AddConfig(const std::string& line) { extra_config_.push_back(line); }

void LocalSshd::SetSessionEnv(const std::string& name, const std::string& value) {
  session_env_[name] = value;
}

void LocalSshd::WriteConfig() const {
  std::ostringstream config;
  config << "ListenAddress 127.0.0.1:" << port_ << "\n"
         << "HostKey " << dir_ << "/host_key\n"
         << "PidFile " << dir_ << "/sshd.pid\n"
         << "AuthorizedKeysFile " << dir_ << "/authorized_keys\n"
         << "UsePAM no\n"
            "StrictModes no\n"
            "PermitRootLogin yes\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "UseDNS no\n"
            "PrintMotd no\n"
            "MaxStartups 100\n"
            "MaxSessions 100\n";
  // sshd uses only the first SetEnv line, so all variables go on one.
  config << "SetEnv";
  for (const auto& [name, value] : session_env_) {
    config << " " << name << "=" << value;
  }
  config << "\n";
  for (const auto& line : extra_config_) {
    config << line << "\n";
  }
  WriteFile(dir_ + "/sshd_config", config.str());
}
void LocalSshd::Start(std::chrono::seconds deadline) {
  if (pid_ > 0) {
    return;
  }
  if (port_ == 0) {
    port_ = FreePort();
  }
  WriteConfig();
  pid_ = Spawn({kSshd, "-D", "-e", "-f", dir_ + "/sshd_config"}, "", dir_ + "/sshd.log");
  if (pid_ <= 0) {
    throw std::runtime_error("cannot start sshd");
  }
  bool exited = false;
  const bool ready = WaitFor(
      [&] {
        int status = 0;
        exited = waitpid(pid_, &status, WNOHANG) == pid_;
        return exited || Accepts(port_);
      },
      deadline);
  if (exited || !ready) {
    if (!exited) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
    throw std::runtime_error("sshd did not start on port " + std::to_string(port_) + ":\n" + Log());
  }
}

void LocalSshd::Stop() {
  if (pid_ <= 0) {
    return;
  }
  KillSessions();
  kill(pid_, SIGTERM);
  if (!WaitFor([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, std::chrono::seconds(5))) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

std::vector<pid_t> LocalSshd::Descendants() const {
  std::vector<pid_t> found;
  if (pid_ <= 0) {
    return found;
  }
  const auto table = ProcessTable();
  std::vector<pid_t> frontier{pid_};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    for (const auto& [pid, info] : table) {
      if (info.first == parent) {
        found.push_back(pid);
        frontier.push_back(pid);
      }
    }
  }
  return found;
}

bool LocalSshd::Runs(const std::string& comm) const {
  const auto table = ProcessTable();
  for (pid_t pid : Descendants()) {
    if (auto it = table.find(pid); it != table.end() && it->second.second == comm) {
      return true;
    }
  }
  return false;
}

void LocalSshd::KillSessions() {
  for (pid_t pid : Descendants()) {
    kill(pid, SIGKILL);
  }
  WaitFor([&] { return Descendants().empty(); }, std::chrono::seconds(5));
}

void LocalSshd::RegenerateHostKey() {
  const std::string key = dir_ + "/host_key";
  std::filesystem::remove(key);
  std::filesystem::remove(key + ".pub");
  if (RunTool({kSshKeygen, "-q", "-t", "ed25519", "-N", "", "-C", "host_key", "-f", key}) != 0) {
    throw std::runtime_error("ssh-keygen failed for the new host key");
  }
}

void LocalSshd::TrustHostKey() const {
  WriteFile(known_hosts(),
            "[127.0.0.1]:" + std::to_string(port_) + " " + ReadFile(dir_ + "/host_key.pub"));
}

std::string LocalSshd::HostKeyFingerprint() const {
  std::string out;
  RunTool({kSshKeygen, "-l", "-f", dir_ + "/host_key.pub"}, &out);
  std::istringstream fields(out);
  std::string bits;
  std::string fingerprint;
  fields >> bits >> fingerprint;
  return fingerprint;
}

std::string LocalSshd::Log() const { return ReadFile(dir_ + "/sshd.log"); }

int LocalSshd::CountInLog(const std::string& needle) const {
  std::istringstream log(Log());
  int count = 0;
  for (std::string line; std::getline(log, line);) {
    count += line.find(needle) != std::string::npos ? 1 : 0;
  }
  return count;
}

Endpoint LocalSshd::MakeEndpoint(const std::string& node) const {
  Endpoint e;
  e.node = node;
  e.host = "127.0.0.1";
  e.port = port_;
  e.user = "root";
  e.identity_file = client_key();
  e.known_hosts = known_hosts();
  e.connect_timeout = std::chrono::seconds(5);
  e.command_timeout = std::chrono::seconds(60);
  return e;
}

}  // namespace gpuctl::test
