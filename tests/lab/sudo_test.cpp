// gpuctl through a real sudo (gpuctl-lab up --sudo-users): worker1 (Ubuntu)
// is reached as `ubuntu` with NOPASSWD sudo, worker2 (Rocky) as `rocky`,
// whose sudo asks for the password (Debian's sudo and PAM checking the hash
// in the node's /etc/shadow), master1 as root. The steps used here need no
// package, so the case does not depend on the lab's repositories: the
// package layers through sudo are in containers_test.cpp.
#include <unistd.h>

#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Lab;
using test::Quote;
using test::Result;
using test::Shell;
using test::Trim;
namespace fs = std::filesystem;

class SudoLabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::MissingPrerequisite().empty()) return;
    test::OnlySteps("os.sysctl,os.hosts");
    lab_ = new Lab(fmt::format("su{}", getpid()));
    if (!lab_->Up(&up_log_, "--nodes 3 --rocky 1 --sudo-users")) return;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
    fs::create_directories(runs_);
  }
  static void TearDownTestSuite() {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
    delete lab_;
    lab_ = nullptr;
  }
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_FALSE(lab_->nodes().empty()) << up_log_;
  }

  // gpuctl ARGS INVENTORY with `env` (assignments) before it.
  static Result Gpuctl(const std::string& args, const std::string& env = "") {
    return Shell(env + " NO_COLOR=1 " + GPUCTL_BINARY + " " + args + " " +
                 Quote(lab_->Env("LAB_INVENTORY")) + " 2>&1 </dev/null");
  }
  static std::string RunDir(const std::string& name) { return (runs_ / name).string(); }
  static std::string On(const std::string& node, const std::string& command) {
    return Trim(lab_->Ssh(node, command).out);
  }
  // A command on a node through its sshd as `user` with the lab key; the
  // password, if any, in $GPUCTL_PW there (sent on stdin, not in argv).
  static Result SshAs(const std::string& user, const std::string& node, const std::string& command,
                      const std::string& password = "") {
    return Shell("printf '%s\\n' " + Quote(password) + " | ssh -i " + Quote(lab_->Env("LAB_KEY")) +
                 " -o UserKnownHostsFile=" + Quote(lab_->Env("LAB_KNOWN_HOSTS")) +
                 " -o StrictHostKeyChecking=yes -o BatchMode=yes -o LogLevel=ERROR " + user + "@" +
                 lab_->Node(node).address + " " +
                 Quote("IFS= read -r GPUCTL_PW; export GPUCTL_PW; " + command));
  }
  // Files under `dir` holding `text` (grep -rlF), one a line.
  static std::string FilesWith(const std::string& dir, const std::string& text) {
    return Shell("grep -rlF -e " + Quote(text) + " " + Quote(dir) + " 2>/dev/null").out;
  }

  static Lab* lab_;
  static std::string up_log_;
  static fs::path runs_;
};

Lab* SudoLabTest::lab_ = nullptr;
std::string SudoLabTest::up_log_;
fs::path SudoLabTest::runs_;

TEST_F(SudoLabTest, AppliesAsTheLoginUserThroughSudoOnBothFamilies) {
  const std::string inventory = test::ReadFile(lab_->Env("LAB_INVENTORY"));
  ASSERT_NE(inventory.find("ssh: {user: ubuntu, become: true}"), std::string::npos) << inventory;
  ASSERT_NE(inventory.find("ssh: {user: rocky, become: true, become_password_env: "
                           "GPUCTL_LAB_SUDO_PASSWORD}"),
            std::string::npos)
      << inventory;
  const std::string password = Trim(test::ReadFile(lab_->Env("LAB_SUDO_PASSWORD_FILE")));
  ASSERT_GE(password.size(), 16U);

  const std::string traces = RunDir("traces");
  const Result first =
      Gpuctl("apply --yes --run-dir " + RunDir("first"), "GPUCTL_TRACE_SCRIPTS=" + Quote(traces));
  ASSERT_EQ(first.status, 0) << first.out;
  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("again"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("again")), 0) << again.out;

  const std::map<std::string, std::string> users = {{"worker1", "ubuntu"}, {"worker2", "rocky"}};
  for (const auto& [node, user] : users) {
    SCOPED_TRACE(node + " as " + user);
    // What the steps wrote belongs to root, not to the login user.
    EXPECT_EQ(On(node,
                 "stat -c %U:%G /etc/sysctl.d/90-gpuctl.conf /etc/modules-load.d/"
                 "gpuctl-k8s.conf | sort -u"),
              "root:root");
    // The node's own logs: sshd let the user in with the lab key, and sudo
    // ran gpuctl's shells as root for that user (sudo's log line format).
    const std::string journal = "journalctl -q --no-pager -o cat";
    EXPECT_NE(On(node, journal + " _COMM=sshd | grep -c 'Accepted publickey for " + user + " '"),
              "0");
    EXPECT_NE(On(node, journal + " _COMM=sudo | grep -cE '^ *" + user +
                           " : .*USER=root ; COMMAND=/usr/bin/sh '"),
              "0");
    // The login itself is unprivileged; sudo makes it root (rocky's only
    // with the password, asked on stdin as gpuctl does).
    const Result login = SshAs(user, node,
                               "id -un; id -u; printf '%s\\n' \"$GPUCTL_PW\" | "
                               "sudo -S -p '' id -un",
                               user == "rocky" ? password : "");
    EXPECT_EQ(login.out, user + "\n" + On(node, "id -u " + user) + "\nroot\n");
  }
  // rocky's sudo really asks: without the password it refuses.
  EXPECT_NE(SshAs("rocky", "worker2", "sudo -n true 2>&1").out.find("a password is required"),
            std::string::npos);

  // The password went to sudo on stdin only: not printed, journaled, traced
  // or written anywhere gpuctl writes.
  EXPECT_EQ(first.out.find(password), std::string::npos);
  EXPECT_EQ(again.out.find(password), std::string::npos);
  EXPECT_EQ(FilesWith(runs_.string(), password), "");
  EXPECT_EQ(On("worker2", "journalctl -q --no-pager | grep -cF " + Quote(password)), "0");
}

TEST_F(SudoLabTest, WrongPasswordStopsTheNodeNamingNodeAndUserAndIsNeverPrinted) {
  std::mt19937_64 random(std::random_device{}());
  const std::string wrong = fmt::format("Wrong-{:016x}", random());
  const std::string traces = RunDir("wrong-traces");
  const Result run =
      Gpuctl("apply --yes --run-dir " + RunDir("wrong"),
             "GPUCTL_LAB_SUDO_PASSWORD=" + Quote(wrong) + " GPUCTL_TRACE_SCRIPTS=" + Quote(traces));
  EXPECT_NE(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("error: node worker2 (rocky@" + lab_->Node("worker2").address +
                         ":22): sudo on worker2 refused the password of user rocky: the "
                         "become password in $GPUCTL_LAB_SUDO_PASSWORD is wrong (sudo: 3 "
                         "incorrect password attempts)"),
            std::string::npos)
      << run.out;
  // The other nodes were not held up by it.
  EXPECT_EQ(On("worker1", "stat -c %U /etc/sysctl.d/90-gpuctl.conf"), "root") << run.out;

  const std::string journal = test::ReadFile(fs::path(RunDir("wrong")) / "journal.jsonl");
  EXPECT_NE(journal.find("refused the password of user rocky"), std::string::npos) << journal;
  EXPECT_EQ(run.out.find(wrong), std::string::npos) << run.out;
  EXPECT_EQ(FilesWith(runs_.string(), wrong), "");
  // Nor did sudo or PAM log it on the node.
  EXPECT_EQ(On("worker2", "journalctl -q --no-pager | grep -cF " + Quote(wrong)), "0");

  // No variable at all: sudo asks, and the message says which one to set.
  const Result unset = Gpuctl("plan", "env -u GPUCTL_LAB_SUDO_PASSWORD");
  EXPECT_NE(unset.out.find("sudo on worker2 asks user rocky for a password, and "
                           "$GPUCTL_LAB_SUDO_PASSWORD (ssh.become_password_env) is not set"),
            std::string::npos)
      << unset.out;
}

}  // namespace
}  // namespace gpuctl
