// SshTransport against a real sshd on 127.0.0.1 (tests/support/local_sshd.h).
// Every case skips with the reason when sshd cannot run here (not root, no
// openssh-server).
#include "gpuctl/transport/ssh_transport.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "support/local_sshd.h"

namespace gpuctl {
namespace {

using namespace std::chrono_literals;
using test::LocalSshd;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Command Script(std::string script, std::chrono::seconds timeout = 0s) {
  Command c;
  c.script = std::move(script);
  c.timeout = timeout;
  return c;
}

class SshTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = LocalSshd::Unavailable(); !reason.empty()) {
      GTEST_SKIP() << reason;
    }
    sshd_ = std::make_unique<LocalSshd>();
    sshd_->Start();
    sshd_->TrustHostKey();
    transport_ = MakeSshTransport();
  }

  std::unique_ptr<Connection> Connect() { return transport_->Connect(sshd_->MakeEndpoint()); }

  // Connect must fail with `kind`; returns the message.
  std::string ConnectFails(const Endpoint& endpoint, ConnectFailure kind) {
    try {
      transport_->Connect(endpoint);
    } catch (const TransportError& e) {
      EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "Connect succeeded";
    return "";
  }

  std::unique_ptr<LocalSshd> sshd_;
  std::unique_ptr<Transport> transport_;
};

TEST_F(SshTransportTest, CapturesStdoutStderrAndExitStatus) {
  auto connection = Connect();
  EXPECT_TRUE(connection->Alive());
  CommandResult r = connection->Run(Script("echo out; echo err >&2; exit 3"));
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_GE(r.duration.count(), 0);
}

TEST_F(SshTransportTest, ScriptRunsInShNotOnACommandLine) {
  auto connection = Connect();
  CommandResult r = connection->Run(Script("cat /proc/$$/cmdline | tr '\\0' ' '"));
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("sh -s"), std::string::npos) << r.out;
}

TEST_F(SshTransportTest, ExportsEnvToTheScript) {
  auto connection = Connect();
  Command c = Script("printf '%s|%s' \"$GREETING\" \"$OTHER_1\"");
  c.env = {{"GREETING", "hello"}, {"OTHER_1", "x"}};
  CommandResult r = connection->Run(c);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "hello|x");
}

TEST_F(SshTransportTest, EnvValueWithQuotesSpacesAndNewlinesSurvives) {
  auto connection = Connect();
  const std::string value = "it's \"quoted\"\n  two  spaces $HOME `id` \\ '' ;|&\nlast line\n";
  Command c = Script("printf '%s' \"$VALUE\"");
  c.env = {{"VALUE", value}};
  CommandResult r = connection->Run(c);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, value);
}

TEST_F(SshTransportTest, InvalidEnvNameIsRejectedBeforeRunning) {
  auto connection = Connect();
  Command c = Script("touch " + sshd_->dir() + "/ran");
  c.env = {{"BAD-NAME", "secret-value"}};
  CommandResult r = connection->Run(c);
  EXPECT_EQ(r.exit_status, -1);
  EXPECT_NE(r.err.find("BAD-NAME"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("secret-value"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(sshd_->dir() + "/ran"));
  EXPECT_TRUE(connection->Alive());
}

TEST_F(SshTransportTest, ManyCommandsShareOneTcpConnection) {
  auto connection = Connect();
  for (int i = 0; i < 20; ++i) {
    CommandResult r = connection->Run(Script("echo " + std::to_string(i)));
    ASSERT_EQ(r.exit_status, 0) << r.err;
    EXPECT_EQ(r.out, std::to_string(i) + "\n");
  }
  EXPECT_EQ(sshd_->CountInLog("Accepted publickey"), 1) << sshd_->Log();
}

TEST_F(SshTransportTest, LargeOutputOnBothStreams) {
  auto connection = Connect();
  constexpr size_t kSize = size_t{5} * 1024 * 1024;
  // Both streams at once, so neither may block the other.
  CommandResult r =
      connection->Run(Script("head -c 5242880 /dev/zero | tr '\\0' e >&2 &\n"
                             "head -c 5242880 /dev/zero | tr '\\0' o\n"
                             "wait\n"));
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.out.size(), kSize);
  EXPECT_EQ(r.err.size(), kSize);
  EXPECT_EQ(r.out.find_first_not_of('o'), std::string::npos);
  EXPECT_EQ(r.err.find_first_not_of('e'), std::string::npos);
}

TEST_F(SshTransportTest, LargeInputWhileTheCommandPrints) {
  auto connection = Connect();
  // sh starts printing 3 MB before it has read the 4 MB of script after the
  // first line: stdin and stdout must be pumped together.
  Command c = Script("head -c 3000000 /dev/zero | tr '\\0' z\n# " + std::string(4000000, 'p') +
                     "\nprintf '%s' \"$BIG\" | wc -c\n");
  // 100 kB: Linux limits one environment string to 128 kB at exec.
  c.env = {{"BIG", std::string(100000, 'b')}};
  CommandResult r = connection->Run(c);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  ASSERT_EQ(r.out.size(), 3000000 + std::string("100000\n").size());
  EXPECT_EQ(r.out.substr(3000000), "100000\n");
}

TEST_F(SshTransportTest, AValueTooLongToExportReachesTheScriptAndProgramsStillStart) {
  auto connection = Connect();
  // 300 kB: exported, every program the script starts would fail with
  // "Argument list too long"; set as a shell variable, only the shell has it.
  Command c = Script("printf '%s' \"$HOSTS\" | wc -c\n/bin/true && echo started\n");
  c.env = {{"HOSTS", std::string(300000, 'h')}};
  CommandResult r = connection->Run(c);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "300000\nstarted\n");
}

TEST_F(SshTransportTest, CommandTimeoutIsHonouredAndTheConnectionStaysUsable) {
  auto connection = Connect();
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = connection->Run(Script("echo started; sleep 30", 1s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_status, -1);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_TRUE(connection->Alive());
  CommandResult next = connection->Run(Script("echo next"));
  EXPECT_EQ(next.exit_status, 0) << next.err;
  EXPECT_EQ(next.out, "next\n");
}

TEST_F(SshTransportTest, EndpointCommandTimeoutAppliesWhenTheCommandHasNone) {
  Endpoint e = sshd_->MakeEndpoint();
  e.command_timeout = 1s;
  auto connection = transport_->Connect(e);
  CommandResult r = connection->Run(Script("sleep 30"));
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.duration, 5s);
}

TEST_F(SshTransportTest, UnknownHostKeyIsRefused) {
  std::filesystem::remove(sshd_->known_hosts());
  const std::string message = ConnectFails(sshd_->MakeEndpoint(), ConnectFailure::kHostKeyUnknown);
  EXPECT_NE(message.find(sshd_->HostKeyFingerprint()), std::string::npos) << message;
  EXPECT_NE(message.find("--trust-new-host-keys"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(sshd_->known_hosts()));
}

TEST_F(SshTransportTest, TrustOnFirstUseRecordsTheKeyForLaterConnects) {
  std::filesystem::remove(sshd_->known_hosts());
  Endpoint e = sshd_->MakeEndpoint();
  e.trust_on_first_use = true;
  EXPECT_EQ(transport_->Connect(e)->Run(Script("true")).exit_status, 0);
  EXPECT_NE(Slurp(sshd_->known_hosts()).find("[127.0.0.1]:" + std::to_string(sshd_->port())),
            std::string::npos);
  e.trust_on_first_use = false;
  EXPECT_EQ(transport_->Connect(e)->Run(Script("true")).exit_status, 0);
}

TEST_F(SshTransportTest, ChangedHostKeyIsRefusedEvenWithTrustOnFirstUse) {
  const std::string recorded = sshd_->HostKeyFingerprint();
  sshd_->Stop();
  sshd_->RegenerateHostKey();
  sshd_->Start();
  Endpoint e = sshd_->MakeEndpoint();
  const std::string before = Slurp(sshd_->known_hosts());
  for (bool trust : {false, true}) {
    e.trust_on_first_use = trust;
    const std::string message = ConnectFails(e, ConnectFailure::kHostKeyChanged);
    EXPECT_NE(message.find(sshd_->HostKeyFingerprint()), std::string::npos) << message;
    // The key it replaced, and where known_hosts has it.
    EXPECT_NE(message.find(recorded + " (ssh-ed25519) at " + sshd_->known_hosts() + ":1"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("ssh-keygen -R '[127.0.0.1]:" + std::to_string(sshd_->port())),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(sshd_->known_hosts()), std::string::npos) << message;
  }
  EXPECT_EQ(Slurp(sshd_->known_hosts()), before);
}

TEST_F(SshTransportTest, WrongClientKeyIsAnAuthFailure) {
  const std::string other = sshd_->dir() + "/other_key";
  ASSERT_EQ(test::RunTool({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other}),
            0);
  Endpoint e = sshd_->MakeEndpoint();
  e.identity_file = other;
  const std::string message = ConnectFails(e, ConnectFailure::kAuth);
  EXPECT_NE(message.find("root@127.0.0.1"), std::string::npos) << message;
  EXPECT_NE(message.find(other), std::string::npos) << message;
  EXPECT_EQ(message.find("PRIVATE KEY"), std::string::npos) << message;
}

TEST_F(SshTransportTest, EncryptedOrMissingKeyIsAnAuthFailureWithAHint) {
  const std::string locked = sshd_->dir() + "/locked_key";
  ASSERT_EQ(test::RunTool(
                {"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "passphrase", "-f", locked}),
            0);
  Endpoint e = sshd_->MakeEndpoint();
  e.identity_file = locked;
  EXPECT_NE(ConnectFails(e, ConnectFailure::kAuth).find("ssh-agent"), std::string::npos);
  e.identity_file = sshd_->dir() + "/no_such_key";
  EXPECT_NE(ConnectFails(e, ConnectFailure::kAuth).find("unreadable"), std::string::npos);
}

TEST_F(SshTransportTest, NothingListeningIsUnreachable) {
  sshd_->Stop();
  const auto start = std::chrono::steady_clock::now();
  ConnectFails(sshd_->MakeEndpoint(), ConnectFailure::kUnreachable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST_F(SshTransportTest, SilentServerIsATimeout) {
  // The kernel completes the TCP handshake on a listening socket nobody
  // accepts from, so the client waits for an SSH banner that never comes.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  Endpoint e = sshd_->MakeEndpoint();
  e.port = ntohs(addr.sin_port);
  e.connect_timeout = 1s;
  const auto start = std::chrono::steady_clock::now();
  ConnectFails(e, ConnectFailure::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  close(fd);
}

TEST_F(SshTransportTest, ConnectionLostMidCommandReturnsPromptly) {
  auto connection = Connect();
  auto running =
      std::async(std::launch::async, [&] { return connection->Run(Script("sleep 10")); });
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!sshd_->Runs("sleep") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(sshd_->Runs("sleep"));
  const auto killed = std::chrono::steady_clock::now();
  sshd_->KillSessions();  // as if the node went down under us
  ASSERT_EQ(running.wait_for(5s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 3s);
  CommandResult r = running.get();
  EXPECT_EQ(r.exit_status, -1);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.err.find("lost the connection"), std::string::npos) << r.err;
  EXPECT_FALSE(connection->Alive());
  EXPECT_EQ(connection->Run(Script("true")).exit_status, -1);
  EXPECT_EQ(Connect()->Run(Script("true")).exit_status, 0);  // the node is back
}

TEST_F(SshTransportTest, ParallelConnectionsFromSeparateThreads) {
  constexpr int kThreads = 8;
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto connection = transport_->Connect(sshd_->MakeEndpoint("node" + std::to_string(t)));
      for (int i = 0; i < 5; ++i) {
        Command c = Script("echo \"$T-$I\"; head -c 100000 /dev/zero >&2");
        c.env = {{"T", std::to_string(t)}, {"I", std::to_string(i)}};
        CommandResult r = connection->Run(c);
        if (r.exit_status == 0 && r.out == std::to_string(t) + "-" + std::to_string(i) + "\n" &&
            r.err.size() == 100000) {
          ++good;
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(good.load(), kThreads * 5);
  EXPECT_EQ(sshd_->CountInLog("Accepted publickey"), kThreads);
}

TEST_F(SshTransportTest, JumpHost) {
  if (access("/usr/bin/ssh", X_OK) != 0) {
    GTEST_SKIP() << "no OpenSSH client";
  }
  Endpoint e = sshd_->MakeEndpoint();
  e.jump_host = "root@127.0.0.1:" + std::to_string(sshd_->port());
  auto connection = transport_->Connect(e);
  CommandResult r = connection->Run(Script("echo through"));
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "through\n");
  EXPECT_EQ(sshd_->CountInLog("Accepted publickey"), 2);  // the jump, then the node
}

// become: a stand-in sudo on the server's PATH, which behaves like sudo -S/-n
// and records its arguments and every line it read as a password.
class SshBecomeTest : public SshTransportTest {
 protected:
  void SetUp() override {
    SshTransportTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    const std::string dir = sshd_->dir();
    std::filesystem::create_directories(dir + "/bin");
    std::ofstream(dir + "/bin/sudo")
        << "#!/bin/sh\n"
           "printf '%s\\n' \"$*\" >> " +
               dir +
               "/sudo.args\n"
               "while [ $# -gt 0 ]; do case \"$1\" in -S) shift;; -n) n=1; shift;; "
               "-p) shift 2;; *) break;; esac; done\n"
               "[ -e " +
               dir +
               "/sudo.asks ] || exec \"$@\"\n"
               "[ -n \"$n\" ] && { echo 'sudo: a password is required' >&2; exit 1; }\n"
               "for try in 1 2 3; do IFS= read -r pw || exit 1\n"
               "  printf '%s\\n' \"$pw\" >> " +
               dir +
               "/sudo.tries\n"
               "  [ \"$pw\" = \"$(cat " +
               dir +
               "/sudo.password)\" ] && exec \"$@\"\n"
               "  echo 'Sorry, try again.' >&2; done\n"
               "echo 'sudo: 3 incorrect password attempts' >&2; exit 1\n";
    chmod((dir + "/bin/sudo").c_str(), 0755);
    std::ofstream(dir + "/sudo.password") << kPassword << "\n";
    sshd_->Stop();
    sshd_->SetSessionEnv("PATH", dir + "/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    sshd_->Start();
  }

  Endpoint BecomeEndpoint(const std::string& password, bool asks) {
    if (asks) {
      std::ofstream(sshd_->dir() + "/sudo.asks") << "";
    }
    Endpoint e = sshd_->MakeEndpoint();
    e.become = true;
    e.become_password = password;
    e.become_password_env = "LAB_SUDO";
    return e;
  }

  static Command SecretScript() {
    Command c = Script("printf '%s' \"$SECRET\"");
    c.env = {{"SECRET", "env-secret"}};
    return c;
  }

  CommandResult RunBecome(const std::string& password, bool asks) {
    return transport_->Connect(BecomeEndpoint(password, asks))->Run(SecretScript());
  }

  // Every line sudo read as a password.
  std::vector<std::string> Tries() {
    std::vector<std::string> lines;
    std::istringstream in(Slurp(sshd_->dir() + "/sudo.tries"));
    for (std::string line; std::getline(in, line);) {
      lines.push_back(line);
    }
    return lines;
  }

  static constexpr const char* kPassword = "pa ss'word";
};

// Connect checks once that sudo makes root (`id -u`), then each command runs
// through sudo of its own.
TEST_F(SshBecomeTest, WithoutPasswordUsesSudoN) {
  CommandResult r = RunBecome("", false);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "env-secret");
  EXPECT_EQ(Slurp(sshd_->dir() + "/sudo.args"), "-n sh -s\n-n sh -s\n");
}

TEST_F(SshBecomeTest, PasswordIsReadBySudo) {
  CommandResult r = RunBecome(kPassword, true);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "env-secret");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Tries(), std::vector<std::string>(2, kPassword));  // the connect check, the script
}

TEST_F(SshBecomeTest, PasswordSudoDoesNotAskForNeverReachesTheShell) {
  CommandResult r = RunBecome(kPassword, false);  // NOPASSWD or cached credentials
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "env-secret");
  EXPECT_EQ(r.err, "");
}

// A wrong password stops the node at connect: one message naming the node,
// the user and the variable, never the password; no script reached sudo.
TEST_F(SshBecomeTest, WrongPasswordFailsAtConnectNamingNodeAndUser) {
  const std::string message =
      ConnectFails(BecomeEndpoint("wrong pass", true), ConnectFailure::kAuth);
  EXPECT_EQ(message, "node local (root@127.0.0.1:" + std::to_string(sshd_->port()) +
                         "): sudo on local refused the password of user root: the become "
                         "password in $LAB_SUDO is wrong (sudo: 3 incorrect password attempts)");
  EXPECT_EQ(message.find("wrong pass"), std::string::npos) << message;
  const std::vector<std::string> tries = Tries();
  ASSERT_FALSE(tries.empty());
  EXPECT_EQ(tries.front(), "wrong pass");
  for (const std::string& line : tries) {
    EXPECT_EQ(line.find("id -u"), std::string::npos) << line;
  }
}

TEST_F(SshBecomeTest, MissingPasswordNamesTheVariable) {
  const std::string message = ConnectFails(BecomeEndpoint("", true), ConnectFailure::kAuth);
  EXPECT_TRUE(
      message.ends_with("): sudo on local asks user root for a password, and $LAB_SUDO "
                        "(ssh.become_password_env) is not set or empty"))
      << message;
}

// The password changes after connect: the failing command's last error line
// (the one reports show) says what sudo refused, and for whom; the script
// never reaches sudo as a password.
TEST_F(SshBecomeTest, WrongPasswordLaterIsNamedInTheCommandsError) {
  auto connection = transport_->Connect(BecomeEndpoint(kPassword, true));
  std::ofstream(sshd_->dir() + "/sudo.password") << "changed\n";
  CommandResult r = connection->Run(SecretScript());
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(
      r.err.ends_with("gpuctl: sudo on local refused the password of user root: the "
                      "become password in $LAB_SUDO is wrong (sudo: 3 incorrect "
                      "password attempts)\n"))
      << r.err;
  for (const std::string& line : Tries()) {
    EXPECT_EQ(line.find("env-secret"), std::string::npos) << line;
    EXPECT_EQ(line.find("printf"), std::string::npos) << line;
  }
}

// A script that fails on its own, even quoting sudo (it ran past sudo), is
// not blamed on sudo: sudo's refusals are all sudo prints.
TEST_F(SshBecomeTest, AScriptsOwnFailureIsNotBlamedOnSudo) {
  auto connection = transport_->Connect(BecomeEndpoint(kPassword, true));
  const std::string err = "checking the sudo rules\nsudo: a password is required\n";
  CommandResult r = connection->Run(Script(
      "printf '%s\\n' 'checking the sudo rules' 'sudo: a password is required' >&2; exit 1"));
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_EQ(r.err, err);
}

}  // namespace
}  // namespace gpuctl
