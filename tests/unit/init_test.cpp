// gpuctl init: the starter inventory it writes passes `gpuctl validate`; it
// never replaces a file without --force, never leaves a partial or temporary
// file, refuses to ask when stdin is not a terminal, and on a terminal asks.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuctl/util/shell_quote.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

struct ShRun {
  int status = -1;
  std::string out;
};

ShRun Sh(const std::string& command) {
  ShRun run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) run.out += buffer;
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class InitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpuctl-init-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // gpuctl ARGS in the test's directory, stdin not a terminal.
  ShRun Gpuctl(const std::string& args) const {
    return Sh("cd " + ShellQuote(dir_.string()) + " && " + ShellQuote(GPUCTL_BINARY) + " " + args +
              " </dev/null");
  }
  [[nodiscard]] std::size_t Entries() const {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++n;
    return n;
  }

  fs::path dir_;
};

TEST_F(InitTest, FromFlagsWritesAnInventoryThatValidates) {
  const ShRun init = Gpuctl(
      "init --master head --workers 'gpu[01-04]' --os ubuntu-22.04 "
      "--addresses 10.0.1.10");
  ASSERT_EQ(init.status, 0) << init.out;
  EXPECT_NE(init.out.find("Wrote inventory.yaml (5 nodes)"), std::string::npos) << init.out;
  const std::string text = Read(dir_ / "inventory.yaml");
  EXPECT_NE(text.find("  - name: head\n    address: 10.0.1.10\n"), std::string::npos) << text;
  // The workers as one range entry, what they share in node_defaults.
  EXPECT_NE(text.find("  - name: gpu[01-04]\n    address: 10.0.1.[11-14]\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("node_defaults:\n  os: ubuntu-22.04\n  roles: [worker]\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\n# "), std::string::npos) << "commented: " << text;
  const ShRun validate = Gpuctl("validate inventory.yaml");
  EXPECT_EQ(validate.status, 0) << validate.out << text;
  EXPECT_NE(validate.out.find("inventory.yaml: ok (5 nodes"), std::string::npos) << validate.out;
  EXPECT_EQ(Entries(), 1U) << "no temporary file left beside it";
}

TEST_F(InitTest, OtherShapesValidateToo) {
  // A login user through sudo, Slurm, GPUs per worker, a list of addresses,
  // a range list, a file elsewhere.
  const ShRun init = Gpuctl(
      "init -f site/cluster.yaml --cluster lab-7 --master ctl --workers 'n[1-2,9],login1' "
      "--os rocky-9 --addresses 10.1.0.1,10.1.0.2,10.1.0.3,10.1.0.9,login1.example.org "
      "--user rocky --orchestrator slurm --gpus '4x NVIDIA H100 80GB HBM3'");
  ASSERT_NE(init.status, 0) << "no such directory yet";
  fs::create_directories(dir_ / "site");
  const ShRun again = Gpuctl(
      "init -f site/cluster.yaml --cluster lab-7 --master ctl --workers 'n[1-2,9],login1' "
      "--os rocky-9 --addresses 10.1.0.1,10.1.0.2,10.1.0.3,10.1.0.9,login1.example.org "
      "--user rocky --orchestrator slurm --gpus '4x NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(again.status, 0) << again.out;
  const std::string text = Read(dir_ / "site/cluster.yaml");
  EXPECT_NE(text.find("  user: rocky\n  become: true"), std::string::npos) << text;
  EXPECT_NE(text.find("{name: n9, address: 10.1.0.9}"), std::string::npos) << text;
  EXPECT_NE(text.find("{name: login1, address: login1.example.org}"), std::string::npos) << text;
  EXPECT_NE(text.find("count: 4"), std::string::npos) << text;
  const ShRun validate = Gpuctl("validate site/cluster.yaml");
  EXPECT_EQ(validate.status, 0) << validate.out << text;
  EXPECT_NE(validate.out.find("ok (5 nodes"), std::string::npos) << validate.out;
}

TEST_F(InitTest, NeverReplacesAFileWithoutForce) {
  std::ofstream(dir_ / "inventory.yaml") << "mine\n";
  const ShRun init = Gpuctl("init --workers gpu1");
  EXPECT_EQ(init.status, 1) << init.out;
  EXPECT_NE(init.out.find("inventory.yaml exists; pass --force"), std::string::npos) << init.out;
  EXPECT_EQ(Read(dir_ / "inventory.yaml"), "mine\n");
  EXPECT_EQ(Entries(), 1U);
  const ShRun forced = Gpuctl("init --workers gpu1 --force");
  EXPECT_EQ(forced.status, 0) << forced.out;
  EXPECT_NE(Read(dir_ / "inventory.yaml").find("name: gpu1"), std::string::npos);
  EXPECT_EQ(Entries(), 1U);
}

TEST_F(InitTest, RefusesToAskWithoutATerminalAndNamesTheFlags) {
  const ShRun init = Gpuctl("init");
  EXPECT_EQ(init.status, 1);
  EXPECT_NE(init.out.find("stdin is not a terminal"), std::string::npos) << init.out;
  EXPECT_NE(init.out.find("gpuctl init --master head --workers 'gpu[01-04]'"), std::string::npos)
      << init.out;
  EXPECT_EQ(Entries(), 0U);
}

TEST_F(InitTest, WhatWouldNotValidateIsNotWritten) {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : {
           Case{"--workers 'gpu[04-01]'", "ends before it starts"},
           Case{"--workers 'gpu[01-04'", "'[' without ']'"},
           Case{"--master 'bad name'", "error:"},
           Case{"--workers gpu1,gpu2 --addresses 10.0.0.1,10.0.0.2", "2 given for 3 nodes"},
           Case{"--orchestrator slurm", "error:"},  // Slurm without a worker
           Case{"--workers gpu1 --gpus lots", "--gpus 'lots'"},
           Case{"--os centos-7", "centos-7"},
       }) {
    const ShRun init = Gpuctl(std::string("init ") + c.args);
    EXPECT_EQ(init.status, 1) << c.args << "\n" << init.out;
    EXPECT_NE(init.out.find(c.says), std::string::npos) << c.args << "\n" << init.out;
    EXPECT_EQ(Entries(), 0U) << c.args;
  }
}

TEST_F(InitTest, OnATerminalItAsks) {
  // script(1) gives gpuctl a pseudo-terminal for stdin; the answers are the
  // cluster name, master, workers, OS, address, user, orchestrator, GPUs.
  if (Sh("command -v script").status != 0) GTEST_SKIP() << "no script(1) here";
  const std::string answers = "lab1\\n\\nn[1-2]\\nbogus-os\\nrocky-9\\n10.0.0.5\\n\\nnone\\n8\\n";
  const ShRun run =
      Sh("cd " + ShellQuote(dir_.string()) + " && printf '" + answers + "' | script -qec " +
         ShellQuote(ShellQuote(GPUCTL_BINARY) + " init") + " /dev/null");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("Cluster name [gpu-cluster]:"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("not an OS gpuctl knows"), std::string::npos) << run.out;
  const std::string text = Read(dir_ / "inventory.yaml");
  EXPECT_NE(text.find("cluster: lab1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  - name: head\n    address: 10.0.0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  os: rocky-9\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  - name: n[1-2]\n    address: 10.0.0.[6-7]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("orchestrator: none\n"), std::string::npos) << text;
  const ShRun validate = Gpuctl("validate inventory.yaml");
  EXPECT_EQ(validate.status, 0) << validate.out << text;
}

}  // namespace
}  // namespace gpuctl
