// The live board as a person sees it: the real gpuctl binary applies to two
// nodes (two real sshd on localhost) inside a tmux pane, whose screen the
// test reads. A step's change waits until the test creates a file, so the
// middle of the run can be looked at for as long as needed: the board shows
// each node's step and its elapsed time moving, the counts and the bar, with
// the finished steps' lines above; at the end the board is gone and the recap
// stands. Under CI the same terminal gets plain lines with the time of day.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "support/local_sshd.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

std::string Sh(const std::string& command, int* status = nullptr) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int rc = pclose(pipe);
  if (status != nullptr) *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// Polls `ready` until it holds or `deadline` passes: the screen is redrawn
// by another process, so looking again is the only way to wait for it.
bool Eventually(const std::function<bool()>& ready, std::chrono::seconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ready();
}

class CliSshBoardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::LocalSshd::Unavailable(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    if (Sh("command -v tmux").empty()) {
      GTEST_SKIP() << "tmux is not installed (scripts/install-deps.sh installs it)";
    }
    for (auto& sshd : sshd_) {
      sshd = std::make_unique<test::LocalSshd>();
      sshd->Start();
      sshd->TrustHostKey();
    }
    dir_ = fs::path(sshd_[0]->dir()) / "board";
    socket_ = "gpuctl-board-" + std::to_string(getpid());
    // board.quick is done at once; board.slow's change waits for `go`.
    WriteFile(dir_ / "playbooks/10-board.yaml", fmt::format(R"(steps:
  - id: board.quick
    description: done at once
    roles: [master, worker]
    params: [node_name]
    probe: |
      test -f '{0}/quick-'"$GPUCTL_NODE_NAME"
    change:
      any: |
        touch '{0}/quick-'"$GPUCTL_NODE_NAME"
  - id: board.slow
    description: runs until the test lets it end
    roles: [master, worker]
    depends: [board.quick]
    params: [node_name]
    probe: |
      test -f '{0}/slow-'"$GPUCTL_NODE_NAME"
    change:
      any: |
        while [ ! -e '{0}/go' ]; do sleep 0.1; done
        touch '{0}/slow-'"$GPUCTL_NODE_NAME"
)",
                                                            dir_.string()));
    std::string nodes;
    for (int i = 0; i < 2; ++i) {
      nodes += fmt::format(R"(  - name: node{}
    address: 127.0.0.1
    os: auto
    roles: [{}]
    ssh: {{port: {}, identity_file: {}, known_hosts: {}}}
)",
                           i + 1, i == 0 ? "master" : "worker", sshd_[i]->port(),
                           sshd_[i]->client_key(), sshd_[i]->known_hosts());
    }
    WriteFile(dir_ / "inventory.yaml",
              "cluster: board\nssh:\n  user: root\n  connect_timeout: 5\n"
              "nodes:\n" +
                  nodes);
    WriteFile(dir_ / "tmux.conf", "set -g history-limit 2000\n");
  }

  void TearDown() override {
    if (!socket_.empty()) Sh("tmux -L " + socket_ + " kill-server");
  }

  // Starts apply in a 100x30 pane; `env` goes before the command.
  void StartApply(const std::string& env) {
    // The shell records gpuctl's exit status, then keeps the pane open for
    // the test to read (a dead pane can be gone before the test looks).
    const std::string command = fmt::format(
        "env -u CI {} GPUCTL_PLAYBOOKS={} {} apply --yes {} --run-dir {}; echo $? >{}.tmp; "
        "mv {}.tmp {}; exec sleep 3600",
        env, (dir_ / "playbooks").string(), GPUCTL_BINARY, (dir_ / "inventory.yaml").string(),
        (dir_ / "run").string(), Status(), Status(), Status());
    int status = 0;
    const std::string out =
        Sh(fmt::format("tmux -L {} -f {} new-session -d -s board -x 100 -y 30 '{}'", socket_,
                       (dir_ / "tmux.conf").string(), command),
           &status);
    ASSERT_EQ(status, 0) << out;
  }

  // The pane as it looks now, and its scrollback.
  std::string Screen() const {
    return Sh("tmux -L " + socket_ + " capture-pane -p -S -2000 -t board");
  }
  std::string Status() const { return (dir_ / "status").string(); }
  bool Ended() const { return fs::exists(Status()); }
  int ExitStatus() const {
    std::ifstream in(Status());
    int status = -1;
    in >> status;
    return status;
  }

  std::unique_ptr<test::LocalSshd> sshd_[2];
  fs::path dir_;
  std::string socket_;
};

TEST_F(CliSshBoardTest, TheBoardShowsWhatRunsNowAndGivesWayToTheRecap) {
  StartApply("");
  // Mid-run: both nodes in board.slow's change, folded into one row.
  const std::regex row(R"(node\[1-2\] \(2\) +board\.slow +change  ([0-9]+)s)");
  std::smatch match;
  std::string screen;
  ASSERT_TRUE(Eventually(
      [&] {
        screen = Screen();
        return std::regex_search(screen, match, row);
      },
      std::chrono::seconds(30)))
      << screen;
  EXPECT_NE(screen.find("apply [############------------] 2/4 steps  nodes: 0 done, 2 running, "
                        "0 waiting, 0 failed"),
            std::string::npos)
      << screen;
  // Above the board: the finished steps, with how long they took.
  EXPECT_TRUE(std::regex_search(screen, std::regex(R"(node1 +board\.quick +applied in )")))
      << screen;
  EXPECT_FALSE(std::regex_search(screen, std::regex(R"(^[0-9]{2}:[0-9]{2}:[0-9]{2} )")))
      << "no time of day on a terminal:\n"
      << screen;

  // Nothing happens on the nodes, yet the elapsed time moves: the board is
  // redrawn by the clock, not only by events.
  const int first = std::stoi(match[1]);
  ASSERT_TRUE(Eventually(
      [&] {
        screen = Screen();
        return std::regex_search(screen, match, row) && std::stoi(match[1]) >= first + 2;
      },
      std::chrono::seconds(20)))
      << screen;

  WriteFile(dir_ / "go", "");
  ASSERT_TRUE(Eventually([&] { return Ended(); }, std::chrono::seconds(30))) << Screen();
  EXPECT_EQ(ExitStatus(), 0) << Screen();
  screen = Screen();
  EXPECT_NE(screen.find("Apply complete in"), std::string::npos) << screen;
  EXPECT_TRUE(std::regex_search(screen, std::regex(R"(node1 +board\.slow +applied in )")))
      << screen;
  EXPECT_TRUE(std::regex_search(screen, std::regex(R"(node2 +board\.slow +applied in )")))
      << screen;
  // The board was erased for good: no row, no counts left on the screen.
  EXPECT_EQ(screen.find("steps  nodes:"), std::string::npos) << screen;
  EXPECT_FALSE(std::regex_search(screen, row)) << screen;
}

TEST_F(CliSshBoardTest, UnderCiATerminalGetsPlainLinesWithTheTimeOfDay) {
  WriteFile(dir_ / "go", "");
  StartApply("CI=true");
  ASSERT_TRUE(Eventually([&] { return Ended(); }, std::chrono::seconds(30))) << Screen();
  const std::string screen = Screen();
  EXPECT_EQ(ExitStatus(), 0) << screen;
  for (const char* step : {"quick", "slow"}) {
    for (const char* node : {"node1", "node2"}) {
      EXPECT_TRUE(std::regex_search(
          screen, std::regex(fmt::format(R"((^|\n)[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}} {} +board\.{} +)"
                                         R"(applied in [0-9]+\.[0-9]s)",
                                         node, step))))
          << node << " " << step << ":\n"
          << screen;
    }
  }
  EXPECT_EQ(screen.find("steps  nodes:"), std::string::npos) << "no board under CI:\n" << screen;
}

}  // namespace
}  // namespace gpuctl
