// Bad input ends fast: every file gpuctl reads from the admin goes through
// input_file.h, which refuses what is not a regular file and what is larger
// than its bound, with a message naming which; an inventory has at most
// kMaxInventoryNodes nodes; a changed host key names both fingerprints.
//
// No case measures time. Where the old behaviour was to hang (a FIFO with no
// writer, /dev/zero), the read runs under a watchdog, a child's alarm(2) or
// timeout(1), that turns a hang into a failure instead of a stuck test run.
#include "gpuctl/util/input_file.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpuctl/model/inventory.h"
#include "support/lab_support.h"
#include "support/local_sshd.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using test::Quote;
using test::Shell;

// A watchdog far beyond any honest read, so it only turns a hang into a
// failure.
constexpr unsigned kWatchdogSeconds = 120;

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpuctl-bad-input.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // ReadInputFile in a child process that alarm(2) kills if the read blocks:
  // the refusal's text, or "read N bytes", or how the child ended.
  static std::string ReadInChild(const std::string& path, std::uint64_t max_bytes) {
    int out[2];
    if (pipe(out) != 0) {
      return "pipe failed";
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(out[0]);
      alarm(kWatchdogSeconds);
      std::string why;
      const auto text = ReadInputFile(path, max_bytes, why);
      const std::string said = text ? fmt::format("read {} bytes", text->size()) : why;
      const ssize_t written = write(out[1], said.data(), said.size());
      _exit(written == static_cast<ssize_t>(said.size()) ? 0 : 1);
    }
    close(out[1]);
    std::string said;
    char buffer[512];
    ssize_t n = 0;
    while ((n = read(out[0], buffer, sizeof buffer)) > 0) {
      said.append(buffer, static_cast<std::size_t>(n));
    }
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      return fmt::format("child killed by signal {} (the read blocked)", WTERMSIG(status));
    }
    return said;
  }

  fs::path dir_;
};

TEST_F(InputFileTest, ReadsARegularFileUpToAndIncludingTheBound) {
  const fs::path file = dir_ / "inventory.yaml";
  WriteFile(file, "cluster: x\n");
  std::string why;
  EXPECT_EQ(ReadInputFile(file.string(), 11, why), "cluster: x\n") << why;
  EXPECT_EQ(ReadInputFile(file.string(), 10, why), std::nullopt);
  EXPECT_EQ(why, "11 bytes is larger than the 10 bytes gpuctl reads");
}

TEST_F(InputFileTest, AFifoWithNoWriterIsRefusedNotWaitedOn) {
  const fs::path fifo = dir_ / "inventory.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadInChild(fifo.string(), kMaxInventoryBytes), "not a regular file (a FIFO)");
}

TEST_F(InputFileTest, DevZeroIsRefusedNotReadForever) {
  EXPECT_EQ(ReadInChild("/dev/zero", kMaxInventoryBytes),
            "not a regular file (a character device)");
}

TEST_F(InputFileTest, ADirectoryIsRefused) {
  std::string why;
  EXPECT_EQ(ReadInputFile(dir_.string(), kMaxInventoryBytes, why), std::nullopt);
  EXPECT_EQ(why, "not a regular file (a directory)");
}

TEST_F(InputFileTest, ASocketIsRefused) {
  const fs::path path = dir_ / "socket";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  std::string why;
  EXPECT_EQ(ReadInputFile(path.string(), kMaxInventoryBytes, why), std::nullopt);
  EXPECT_EQ(why, "not a regular file (a socket)");
  close(fd);
}

TEST_F(InputFileTest, AnOversizedFileIsRefusedWithoutReadingIt) {
  // Sparse: 40 MiB that take no disk, and that nothing reads.
  const fs::path file = dir_ / "inventory.yaml";
  WriteFile(file, "");
  fs::resize_file(file, 40 * kMiB);
  EXPECT_EQ(ReadInChild(file.string(), 16 * kMiB), "40 MiB is larger than the 16 MiB gpuctl reads");
  // One byte over: the sizes are exact rather than both "16 MiB".
  fs::resize_file(file, 16 * kMiB + 1);
  EXPECT_EQ(ReadInChild(file.string(), 16 * kMiB),
            "16777217 bytes is larger than the 16 MiB (16777216 bytes) gpuctl reads");
}

TEST_F(InputFileTest, AMissingFileSaysSo) {
  std::string why;
  EXPECT_EQ(ReadInputFile((dir_ / "absent.yaml").string(), kMaxInventoryBytes, why), std::nullopt);
  EXPECT_EQ(why, "cannot read: No such file or directory");
}

TEST_F(InputFileTest, APrefixIsReadFromAFileOfAnySize) {
  const fs::path file = dir_ / "plan.json";
  WriteFile(file, "  {\"format\"");
  fs::resize_file(file, 40 * kMiB);
  std::string why;
  EXPECT_EQ(ReadInputPrefix(file.string(), 4, why), "  {\"");
  EXPECT_EQ(ReadInputPrefix("/dev/zero", 4, why), std::nullopt);
  EXPECT_EQ(why, "not a regular file (a character device)");
}

TEST_F(InputFileTest, LinesComeOneAtATimeAndAnOverlongOneIsSkipped) {
  const fs::path file = dir_ / "journal.jsonl";
  WriteFile(file, "first\n" + std::string(kMaxLineBytes + 1, 'x') + "\nsecond\n\nlast-torn");
  std::vector<std::string> lines;
  std::string why;
  EXPECT_TRUE(ReadInputLines(
      file.string(), kMaxJournalBytes, [&](std::string_view line) { lines.emplace_back(line); },
      why))
      << why;
  EXPECT_EQ(lines, (std::vector<std::string>{"first", "second", "", "last-torn"}));

  EXPECT_FALSE(ReadInputLines(
      file.string(), 10, [&](std::string_view) { ADD_FAILURE() << "read past the bound"; }, why));
  EXPECT_EQ(why, FormatSize(fs::file_size(file)) + " is larger than the 10 bytes gpuctl reads");
}

TEST_F(InputFileTest, CheckAllowsAMissingFileAndRefusesADevice) {
  EXPECT_EQ(CheckInputFile((dir_ / "known_hosts").string(), kMaxKnownHostsBytes), "");
  EXPECT_EQ(CheckInputFile("/dev/zero", kMaxKnownHostsBytes),
            "not a regular file (a character device)");
}

TEST(FormatSizeTest, ReadsLikeAPerson) {
  EXPECT_EQ(FormatSize(10), "10 bytes");
  EXPECT_EQ(FormatSize(std::uint64_t{900} * 1024), "900 KiB");
  EXPECT_EQ(FormatSize(3 * kMiB / 2), "1.5 MiB");
  EXPECT_EQ(FormatSize(16 * kMiB), "16 MiB");
  EXPECT_EQ(FormatSize(149 * kMiB + std::uint64_t{300} * 1024), "149 MiB");
}

// An inventory of `count` nodes, all aliases of the first: 3 bytes a node,
// so the node bound is reached without a large file or a large tree.
std::string InventoryOfAliases(std::size_t count) {
  std::string text =
      "cluster: big\n"
      "nodes: [&n {name: node, address: 10.0.0.1, os: ubuntu-22.04, roles: [worker]}";
  for (std::size_t i = 1; i < count; ++i) {
    text += ",*n";
  }
  return text + "]\n";
}

TEST(InventoryBoundTest, MoreThanTheNodeBoundIsOneErrorAtTheNodesKey) {
  Diagnostics diagnostics;
  EXPECT_FALSE(ParseInventory(InventoryOfAliases(kMaxInventoryNodes + 1), "big.yaml", diagnostics));
  const std::string errors = diagnostics.Format();
  EXPECT_NE(errors.find(fmt::format("big.yaml:2:1: error: {} nodes; gpuctl reads at most {} in "
                                    "one inventory",
                                    kMaxInventoryNodes + 1, kMaxInventoryNodes)),
            std::string::npos)
      << errors.substr(0, 2000);
  // Not read further: no error about any node (the aliases share one name).
  EXPECT_EQ(errors.find("duplicate"), std::string::npos) << errors.substr(0, 2000);
}

TEST(InventoryBoundTest, ExactlyTheNodeBoundIsRead) {
  Diagnostics diagnostics;
  ParseInventory(InventoryOfAliases(kMaxInventoryNodes), "big.yaml", diagnostics);
  const std::string errors = diagnostics.Format();
  EXPECT_EQ(errors.find("gpuctl reads at most"), std::string::npos) << errors.substr(0, 2000);
  // It was read: each alias is a node named "node", so all but one are
  // duplicates.
  EXPECT_NE(errors.find("duplicate node name 'node'"), std::string::npos) << errors.substr(0, 2000);
}

TEST(InventoryBoundTest, ADenselyWrittenFileIsRefusedBeforeItsTreeIsBuilt) {
  // "[a,a,...]": two bytes a value, 8 MiB, past kMaxYamlValues.
  std::string text = "cluster: dense\nnodes: [a";
  text.reserve(2 * kMaxYamlValues + 64);
  for (std::size_t i = 0; i < kMaxYamlValues; ++i) {
    text += ",a";
  }
  text += "]\n";
  Diagnostics diagnostics;
  EXPECT_FALSE(ParseInventory(text, "dense.yaml", diagnostics));
  // The value past the bound: the mapping, its 2 keys, 2 values and the list
  // are 6, so the list's (kMaxYamlValues - 5)th item, at 2 bytes an item.
  const std::size_t column = std::string("nodes: [").size() + 2 * (kMaxYamlValues - 5) + 1;
  EXPECT_EQ(diagnostics.Format(),
            fmt::format("dense.yaml:2:{}: error: more than {} YAML values (scalars, lists and "
                        "mappings) in one file; gpuctl reads at most that many\n",
                        column, kMaxYamlValues));
}

// The real binary, as an admin meets it. timeout(1) is the watchdog: a
// gpuctl that blocks is killed and the case fails on its exit status (124).
class BadInputCliTest : public InputFileTest {
 protected:
  static test::Result Gpuctl(const std::string& args, const std::string& playbooks = "") {
    const std::string env = playbooks.empty() ? "" : "GPUCTL_PLAYBOOKS=" + Quote(playbooks) + " ";
    return Shell(fmt::format("{}NO_COLOR=1 timeout {} {} {} 2>&1 </dev/null", env, kWatchdogSeconds,
                             Quote(GPUCTL_BINARY), args));
  }

  // `gpuctl args` exits 1 (not 124, the watchdog's) and prints `line`.
  static void ExpectRefused(const std::string& args, const std::string& line,
                            const std::string& playbooks = "") {
    const auto run = Gpuctl(args, playbooks);
    EXPECT_EQ(run.status, 1) << run.out.substr(0, 2000);
    EXPECT_NE(run.out.find(line), std::string::npos) << run.out.substr(0, 2000);
  }
};

TEST_F(BadInputCliTest, ValidateRefusesDevZero) {
  ExpectRefused("validate /dev/zero",
                "/dev/zero: error: not a regular file (a character device)\n");
}

TEST_F(BadInputCliTest, ValidateRefusesAFifo) {
  const fs::path fifo = dir_ / "inventory.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused("validate " + Quote(fifo.string()),
                fifo.string() + ": error: not a regular file (a FIFO)\n");
}

TEST_F(BadInputCliTest, ValidateRefusesADirectory) {
  ExpectRefused("validate " + Quote(dir_.string()),
                dir_.string() + ": error: not a regular file (a directory)\n");
}

TEST_F(BadInputCliTest, ValidateRefusesAnOversizedInventory) {
  const fs::path file = dir_ / "inventory.yaml";
  WriteFile(file, "cluster: x\n");
  fs::resize_file(file, 40 * kMiB);
  ExpectRefused("validate " + Quote(file.string()),
                file.string() + ": error: 40 MiB is larger than the 32 MiB gpuctl reads\n");
}

TEST_F(BadInputCliTest, ValidateRefusesTooManyNodesAtTheNodesKey) {
  const fs::path file = dir_ / "inventory.yaml";
  WriteFile(file, InventoryOfAliases(kMaxInventoryNodes + 1));
  ExpectRefused("validate " + Quote(file.string()),
                fmt::format("{}:2:1: error: {} nodes; gpuctl reads at most {}", file.string(),
                            kMaxInventoryNodes + 1, kMaxInventoryNodes));
}

TEST_F(BadInputCliTest, APlaybookThatIsAFifoIsRefused) {
  const fs::path playbooks = dir_ / "playbooks";
  fs::create_directories(playbooks);
  ASSERT_EQ(mkfifo((playbooks / "10-os.yaml").c_str(), 0600), 0);
  const fs::path inventory = dir_ / "inventory.yaml";
  WriteFile(inventory, "cluster: x\nnodes:\n  - {name: m, address: 10.0.0.1, roles: [master]}\n");
  ExpectRefused("validate " + Quote(inventory.string()),
                (playbooks / "10-os.yaml").string() + ": error: not a regular file (a FIFO)\n",
                playbooks.string());
}

TEST_F(BadInputCliTest, ApplyRefusesAFifoAndAnOversizedSavedPlan) {
  const fs::path fifo = dir_ / "plan.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused("apply --yes " + Quote(fifo.string()),
                fifo.string() + ": error: not a regular file (a FIFO)\n");

  const fs::path plan = dir_ / "big-plan.json";
  WriteFile(plan, "{\"format\": \"gpuctl.plan/v2\"");
  fs::resize_file(plan, kMaxSavedPlanBytes + kMiB);
  ExpectRefused("apply --yes " + Quote(plan.string()),
                plan.string() + ": error: 1025 MiB is larger than the 1024 MiB gpuctl reads\n");
}

// A changed host key, seen through `gpuctl plan` against a real sshd: the
// message names the key known_hosts recorded (and where) and the one the node
// presented, each as `ssh-keygen -lf` prints it.
class HostKeyCliTest : public BadInputCliTest {
 protected:
  void SetUp() override {
    InputFileTest::SetUp();
    if (const std::string why = test::LocalSshd::Unavailable(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    sshd_ = std::make_unique<test::LocalSshd>();
    sshd_->Start();
    sshd_->TrustHostKey();
    WriteFile(dir_ / "playbooks/10-none.yaml",
              "steps:\n  - id: none.ok\n    description: nothing\n    roles: [master]\n"
              "    probe: |\n      exit 0\n    change:\n      any: |\n        exit 0\n");
  }

  void WriteInventory(const std::string& known_hosts, const std::string& identity) {
    WriteFile(dir_ / "inventory.yaml",
              fmt::format("cluster: local\n"
                          "ssh: {{user: root, port: {}, identity_file: {}, known_hosts: {}, "
                          "connect_timeout: 5}}\n"
                          "nodes:\n  - {{name: master1, address: 127.0.0.1, os: auto, "
                          "roles: [master]}}\n",
                          sshd_->port(), identity, known_hosts));
  }

  test::Result Plan() {
    return Gpuctl("plan " + Quote((dir_ / "inventory.yaml").string()),
                  (dir_ / "playbooks").string());
  }

  std::unique_ptr<test::LocalSshd> sshd_;
};

TEST_F(HostKeyCliTest, AChangedKeyNamesTheRecordedAndThePresentedFingerprint) {
  const std::string recorded = sshd_->HostKeyFingerprint();
  // The node's entry on line 3, after a comment and another host's key.
  std::ifstream entry_in(sshd_->known_hosts());
  std::string entry;
  std::getline(entry_in, entry);
  const std::string other_key = dir_ / "other_key";
  ASSERT_EQ(
      test::RunTool({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other_key}), 0);
  std::ifstream other_in(other_key + ".pub");
  std::string other;
  std::getline(other_in, other);
  WriteFile(sshd_->known_hosts(), "# nodes of the lab\n198.18.0.99 " + other + "\n" + entry + "\n");
  WriteInventory(sshd_->known_hosts(), sshd_->client_key());

  sshd_->Stop();
  sshd_->RegenerateHostKey();
  sshd_->Start();
  const std::string presented = sshd_->HostKeyFingerprint();
  ASSERT_NE(recorded, presented);
  ASSERT_EQ(recorded.rfind("SHA256:", 0), 0U) << recorded;

  const auto run = Plan();
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("HOST KEY CHANGED. The node presented " + presented + " (ssh-ed25519)"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("the key recorded for it: " + recorded + " (ssh-ed25519) at " +
                         sshd_->known_hosts() + ":3."),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(fmt::format("ssh-keygen -R '[127.0.0.1]:{}' -f", sshd_->port())),
            std::string::npos)
      << run.out;
  EXPECT_EQ(sshd_->CountInLog("Accepted publickey"), 0) << "nothing may run on a changed host";
}

TEST_F(HostKeyCliTest, AnIdentityFileThatIsAFifoIsRefused) {
  const fs::path fifo = dir_ / "id_fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  WriteInventory(sshd_->known_hosts(), fifo.string());
  const auto run = Plan();
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find(fifo.string() + " (unreadable: not a regular file (a FIFO))"),
            std::string::npos)
      << run.out;
}

TEST_F(HostKeyCliTest, AKnownHostsThatIsADeviceIsRefused) {
  WriteInventory("/dev/zero", sshd_->client_key());
  const auto run = Plan();
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("known_hosts /dev/zero: not a regular file (a character device)"),
            std::string::npos)
      << run.out;
}

// `gpuctl reset` refuses before it connects: the master alone would strand
// the workers, and a saved plan is not what a reset takes.
TEST_F(BadInputCliTest, ResetRefusesTheMasterAloneAndASavedPlan) {
  const fs::path inventory = dir_ / "inventory.yaml";
  WriteFile(inventory,
            "cluster: x\nnodes:\n"
            "  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}\n"
            "  - {name: w1, address: 198.18.0.11, os: ubuntu-22.04, roles: [worker]}\n");
  ExpectRefused("reset --limit m1 " + Quote(inventory.string()),
                "gpuctl: reset: cannot reset m1 and keep the other nodes: it is the master (the "
                "control plane and the Slurm controller); reset every node (no --limit), or "
                "leave m1 out; nothing was sent to any node\n",
                GPUCTL_PLAYBOOK_DIR);
  const fs::path saved = dir_ / "plan.json";
  WriteFile(saved, "{\"format\": \"gpuctl.plan/v2\"}\n");
  const auto run = Gpuctl("reset " + Quote(saved.string()), GPUCTL_PLAYBOOK_DIR);
  EXPECT_EQ(run.status, 1) << run.out;
}

}  // namespace
}  // namespace gpuctl
