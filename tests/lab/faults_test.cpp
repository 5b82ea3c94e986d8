// The fault suite (issue 14): faults a cluster meets while gpuctl works on it,
// injected into runs of the real gpuctl binary against a lab: a node's link
// cut for 30 s and for good while a step runs, a node that never comes back
// from its reboot, a lossy link, and gpuctl itself SIGKILLed while dpkg runs
// on a node. Each case prints one "FAULT-RESULT:" line (detected after how
// long, what was reported, converged or not): the figures of
// docs/reliability.md, readable in any CI log. Times are recorded, never
// asserted (a loaded 2-core runner is slow).
//
// One lab serves the whole suite (CI time): tests/CMakeLists.txt runs the
// suite as one ctest test, one process. Every case leaves the lab as it
// found it: links restored, nodes on.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Lab;
using test::PollUntil;
using test::Quote;
using test::ReadFile;
using test::Result;
using test::Shell;
using test::Trim;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A gpuctl started in the background, its output (stdout and stderr
// together) read as it comes, its pid at hand for signals. A thread drains
// the output, so a test that waits on something else never blocks gpuctl on
// a full pipe. On a pseudo-terminal (kPty) gpuctl has a terminal on stdin,
// stdout and stderr, as at an admin's shell, and Type() sends it keys:
// "\x03" is Ctrl-C, delivered as SIGINT by the terminal's line discipline.
class Background {
 public:
  enum class Terminal { kPipe, kPty };

  Background(const std::vector<std::string>& argv, Terminal terminal) {
    // Everything the child needs is built before fork: between fork and
    // exec it calls only async-signal-safe functions.
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    if (terminal == Terminal::kPty) {
      pid_ = forkpty(&fd_, nullptr, nullptr, nullptr);
      if (pid_ == 0) {
        execv(args[0], args.data());
        _exit(127);
      }
    } else {
      int out[2];
      if (pipe2(out, O_CLOEXEC) != 0) return;
      pid_ = fork();
      if (pid_ == 0) {
        const int null = open("/dev/null", O_RDONLY);
        dup2(null, STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(out[1], STDERR_FILENO);
        execv(args[0], args.data());
        _exit(127);
      }
      close(out[1]);
      fd_ = out[0];
    }
    if (pid_ > 0) reader_ = std::thread([this] { Drain(); });
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() {
    if (pid_ > 0 && status_ < 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (fd_ >= 0) close(fd_);
  }

  [[nodiscard]] bool started() const { return pid_ > 0; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] std::string Output() const {
    std::lock_guard lock(mutex_);
    return output_;
  }
  // Polls the output until a line holds every one of `parts`.
  bool WaitForLine(const std::vector<std::string>& parts, std::chrono::seconds deadline) const {
    return PollUntil(deadline, [&] {
      std::istringstream lines(Output());
      for (std::string line; std::getline(lines, line);) {
        if (std::all_of(parts.begin(), parts.end(), [&](const std::string& part) {
              return line.find(part) != std::string::npos;
            })) {
          return true;
        }
      }
      return false;
    });
  }
  // Keys for a kPty gpuctl ("\x03": Ctrl-C).
  bool Type(const std::string& keys) const {
    return write(fd_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size());
  }
  void Signal(int signal_number) const { kill(pid_, signal_number); }
  // Whether gpuctl has ended, leaving it to Wait() to collect.
  [[nodiscard]] bool Ended() const {
    siginfo_t info{};
    return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid_;
  }
  // The exit status once gpuctl has ended (128 + N if signal N ended it),
  // after all its output is read.
  int Wait() {
    if (status_ >= 0 || pid_ <= 0) return status_;
    int raw = 0;
    while (waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
    }
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    if (reader_.joinable()) reader_.join();
    return status_;
  }

 private:
  void Drain() {
    char buffer[4096];
    for (;;) {
      const ssize_t n = read(fd_, buffer, sizeof buffer);
      if (n > 0) {
        std::lock_guard lock(mutex_);
        output_.append(buffer, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return;  // end of file; EIO on a pty once gpuctl has closed its side
      }
    }
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  int status_ = -1;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::string output_;
};

// The journal's "node-failed" error for `node` in a run directory, or "".
std::string NodeFailure(const std::string& run_dir, const std::string& node) {
  std::istringstream journal(ReadFile(fs::path(run_dir) / "journal.jsonl"));
  for (std::string line; std::getline(journal, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.value("event", "") == "node-failed" && e.value("node", "") == node) {
      return e.value("error", "");
    }
  }
  return "";
}

// The output line that names `node` and holds `text` (trimmed), or "". In
// a pipe each line starts with the time of day ("14:03:07 "), then the node;
// through a pseudo-terminal a line may follow the live board's erase
// sequence (cursor up, clear), which is dropped first.
std::string LineWith(const std::string& output, const std::string& node, const std::string& text) {
  const std::regex starts("^([0-9]{2}:[0-9]{2}:[0-9]{2} )?" + node + " ");
  const std::regex escapes("\r|\x1b\\[[0-9;?]*[A-Za-z]");
  std::istringstream lines(output);
  for (std::string raw; std::getline(lines, raw);) {
    std::string line = std::regex_replace(raw, escapes, "");
    if (std::regex_search(line, starts) && line.find(text) != std::string::npos) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      return line;
    }
  }
  return "";
}

class FaultsLabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::MissingPrerequisite().empty() || Shell("command -v nft >/dev/null").status != 0) {
      return;
    }
    // Each command names its steps (--only) and catalog (--playbooks): what
    // another suite in this process left in GPUCTL_ONLY must not leak in.
    test::OnlySteps("");
    const auto start = Clock::now();
    // The smallest lab that shows every fault: a master and two GPU
    // workers, one of each family (the reboot case's survivor is Rocky).
    lab_ = new Lab(fmt::format("f{}", getpid()));
    if (!lab_->Up(&up_log_, "--nodes 3 --rocky 1")) return;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
    // The shipped catalog plus faults.hold, a step that runs until the test
    // lets it go (tests/fixtures/faults/99-faults.yaml).
    playbooks_ = runs_ / "playbooks";
    fs::create_directories(playbooks_);
    fs::copy(fs::path(GPUCTL_SOURCE_DIR) / "playbooks", playbooks_);
    fs::copy_file(fs::path(GPUCTL_FIXTURES_DIR) / "faults/99-faults.yaml",
                  playbooks_ / "99-faults.yaml");
    std::cout << fmt::format("FAULT-RESULT: lab up (--nodes 3 --rocky 1) in {:.1f} s\n",
                             SecondsSince(start));
  }
  static void TearDownTestSuite() {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
    delete lab_;
    lab_ = nullptr;
  }
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    if (Shell("command -v nft >/dev/null").status != 0) {
      GTEST_SKIP() << test::kCannotRunHere
                   << "nft (nftables) is missing: run scripts/install-deps.sh lab";
    }
    ASSERT_NE(lab_, nullptr);
    ASSERT_FALSE(lab_->nodes().empty()) << up_log_;
  }

  // `gpuctl --playbooks ... --only ONLY COMMAND_AND_ARGS INVENTORY`, waited
  // for and timed. (gpuctl's global options go before the command.)
  struct Timed {
    Result result;
    double seconds = 0;
  };
  static Timed Gpuctl(const std::string& only, const std::string& command_and_args) {
    const auto start = Clock::now();
    Timed t;
    t.result =
        Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " --playbooks " +
              Quote(playbooks_.string()) + " --only " + Quote(only) + " " + command_and_args + " " +
              Quote(lab_->Env("LAB_INVENTORY")) + " 2>&1 </dev/null");
    t.seconds = SecondsSince(start);
    return t;
  }
  // `gpuctl --playbooks ... --only ONLY apply --yes --run-dir DIR [extra]
  // INVENTORY`, started in the background.
  static std::unique_ptr<Background> StartApply(
      const std::string& only, const std::string& run_dir, const std::vector<std::string>& extra,
      Background::Terminal terminal = Background::Terminal::kPipe) {
    setenv("NO_COLOR", "1", 1);
    std::vector<std::string> argv = {GPUCTL_BINARY, "--playbooks", playbooks_.string(),
                                     "--only",      only,          "apply",
                                     "--yes",       "--run-dir",   run_dir};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(lab_->Env("LAB_INVENTORY"));
    return std::make_unique<Background>(argv, terminal);
  }
  static std::string RunDir(const std::string& name) { return (runs_ / name).string(); }
  static std::string On(const std::string& node, const std::string& command) {
    return Trim(lab_->Ssh(node, command).out);
  }
  static std::string Netns(const std::string& node) { return lab_->Env("LAB_NETNS_PREFIX") + node; }
  // A path on a node's disk, seen from the host: the upper layer of its root
  // file system holds everything written in the node.
  static fs::path OnDisk(const std::string& node, const std::string& path) {
    return fs::path(lab_->Env("LAB_STATE")) / "nodes" / node / "upper" / path.substr(1);
  }

  // A network fault on nodes' eth0, as nftables rules in each node's network
  // namespace (the kernel has no sch_netem): both directions, the node's own
  // loopback untouched. Lifted when it goes out of scope, so a failed
  // assertion never leaves a node cut off for the next case.
  class NetFault {
   public:
    // `verdict`: what happens to a packet, e.g. "drop" or
    // "numgen random mod 100 < 5 counter drop".
    NetFault(std::vector<std::string> nodes, const std::string& verdict)
        : nodes_(std::move(nodes)) {
      for (const std::string& node : nodes_) {
        const std::string rules = fmt::format(
            "table inet gpuctl_fault {{\n"
            "  chain in {{ type filter hook input priority 0; policy accept; "
            "iifname \"eth0\" {0}; }}\n"
            "  chain out {{ type filter hook output priority 0; policy accept; "
            "oifname \"eth0\" {0}; }}\n"
            "}}\n",
            verdict);
        const Result r = Shell("printf %s " + Quote(rules) + " | ip netns exec " +
                               Quote(Netns(node)) + " nft -f - 2>&1");
        EXPECT_EQ(r.status, 0) << node << ": " << r.out;
      }
    }
    NetFault(const NetFault&) = delete;
    NetFault& operator=(const NetFault&) = delete;
    ~NetFault() { Lift(); }
    // Packets the rules dropped so far, all nodes and directions.
    [[nodiscard]] long Dropped() const {
      long total = 0;
      for (const std::string& node : nodes_) {
        std::istringstream listing(
            Shell("ip netns exec " + Quote(Netns(node)) + " nft list table inet gpuctl_fault").out);
        for (std::string word; listing >> word;) {
          if (word == "packets" && listing >> word) total += std::stol(word);
        }
      }
      return total;
    }
    void Lift() {
      for (const std::string& node : nodes_) {
        // add-then-delete: no error when the table is already gone.
        Shell(
            "printf 'add table inet gpuctl_fault\\ndelete table inet gpuctl_fault\\n' | "
            "ip netns exec " +
            Quote(Netns(node)) + " nft -f - 2>&1");
      }
      nodes_.clear();
    }

   private:
    std::vector<std::string> nodes_;
  };

  // Command lines of the processes running in a node, read from the host's
  // /proc (a node's pid namespace is a child of the host's; its processes
  // are those in its network namespace). Cheap enough to poll often.
  static std::vector<std::string> NodeProcesses(const std::string& node) {
    struct stat ns {};
    if (stat(("/run/netns/" + Netns(node)).c_str(), &ns) != 0) return {};
    const std::string want = fmt::format("net:[{}]", ns.st_ino);
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      const std::string pid = entry.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::error_code link_ec;
      if (fs::read_symlink(entry.path() / "ns/net", link_ec).string() != want) continue;
      std::string cmdline = ReadFile(entry.path() / "cmdline");
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      found.push_back(Trim(cmdline));
    }
    return found;
  }
  static bool Running(const std::string& node, const std::string& prefix,
                      const std::string& part = "") {
    const auto procs = NodeProcesses(node);
    return std::any_of(procs.begin(), procs.end(), [&](const std::string& cmd) {
      return cmd.rfind(prefix, 0) == 0 && cmd.find(part) != std::string::npos;
    });
  }

  // faults.hold needs a change again on every node; on `held` its change
  // waits until Release.
  static void Hold(const std::string& held) {
    for (const test::LabNode& node : lab_->nodes()) {
      ASSERT_EQ(lab_->Ssh(node.name, "rm -rf /var/lib/gpuctl-faults").status, 0) << node.name;
    }
    ASSERT_EQ(lab_->Ssh(held, "touch /run/gpuctl-fault-hold").status, 0);
  }
  // Through nsenter, not ssh: works while the node's link is cut.
  static void Release(const std::string& node) {
    EXPECT_EQ(Shell(lab_->Tool("exec " + node + " rm -f /run/gpuctl-fault-hold")).status, 0);
  }
  static bool HoldRunning(const std::string& node) {
    return fs::exists(OnDisk(node, "/var/lib/gpuctl-faults/holding"));
  }
  // apply of faults.hold in the background, returned once its change runs on
  // `node` (the script has arrived there and waits for Release), or once
  // gpuctl has ended or two minutes passed: the caller checks HoldRunning.
  static std::unique_ptr<Background> ApplyHeldOn(const std::string& node,
                                                 const std::string& run_dir) {
    Hold(node);
    auto apply = StartApply("faults.hold", run_dir, {});
    PollUntil(std::chrono::seconds(120), [&] { return HoldRunning(node) || apply->Ended(); });
    return apply;
  }

  // One line of figures for the CI log (and docs/reliability.md).
  static void Record(const std::string& fault, const std::string& detected,
                     const std::string& reported, const std::string& converged) {
    std::cout << "FAULT-RESULT: " << fault << " | detected: " << detected
              << " | reported: " << reported << " | converged: " << converged << std::endl;
  }

  static Lab* lab_;
  static std::string up_log_;
  static fs::path runs_;
  static fs::path playbooks_;
};

Lab* FaultsLabTest::lab_ = nullptr;
std::string FaultsLabTest::up_log_;
fs::path FaultsLabTest::runs_;
fs::path FaultsLabTest::playbooks_;

TEST_F(FaultsLabTest, ALinkCutFor30SecondsDuringAStepIsRiddenOut) {
  const std::string dir = RunDir("cut-30s");
  auto apply = ApplyHeldOn("worker1", dir);
  ASSERT_TRUE(HoldRunning("worker1")) << apply->Output();
  const auto cut = Clock::now();
  {
    NetFault link({"worker1"}, "drop");
    // The fault is 30 s of silence: this sleep is its length, not a wait
    // for gpuctl.
    std::this_thread::sleep_for(std::chrono::seconds(30));
  }
  Release("worker1");
  const int status = apply->Wait();
  const double total = SecondsSince(cut);
  const std::string failure = NodeFailure(dir, "worker1");

  EXPECT_EQ(status, 0) << apply->Output();
  EXPECT_EQ(failure, "") << apply->Output();
  for (const test::LabNode& node : lab_->nodes()) {
    EXPECT_EQ(On(node.name, "cat /var/lib/gpuctl-faults/done"), "released") << node.name;
  }
  EXPECT_EQ(ChangesIn(dir), 3);
  Record("worker1's link cut for 30 s during faults.hold",
         failure.empty() ? "not at all (the TCP connection outlived the outage)"
                         : "as a failure: " + failure,
         failure.empty() ? "nothing; the step finished once released" : failure,
         fmt::format("{} (apply exit {}, {:.1f} s after the cut)", status == 0 ? "yes" : "no",
                     status, total));
}

TEST_F(FaultsLabTest, ALinkCutForGoodFailsThatNodeAndTheOthersFinish) {
  const std::string dir = RunDir("cut-for-good");
  auto apply = ApplyHeldOn("worker1", dir);
  ASSERT_TRUE(HoldRunning("worker1")) << apply->Output();
  double detected = -1;
  int status = -1;
  std::string failure;
  {
    NetFault link({"worker1"}, "drop");
    const auto cut = Clock::now();
    EXPECT_TRUE(PollUntil(std::chrono::seconds(300), [&] {
      return !NodeFailure(dir, "worker1").empty();
    })) << apply->Output();
    detected = SecondsSince(cut);
    status = apply->Wait();
    failure = NodeFailure(dir, "worker1");
  }
  EXPECT_EQ(status, 1) << apply->Output();
  EXPECT_NE(failure.find("worker1"), std::string::npos) << failure;
  EXPECT_NE(LineWith(apply->Output(), "worker1", "error:"), "") << apply->Output();
  // The other nodes ran the step to the end.
  EXPECT_EQ(On("master1", "cat /var/lib/gpuctl-faults/done"), "released");
  EXPECT_EQ(On("worker2", "cat /var/lib/gpuctl-faults/done"), "released");

  // The link is back (the fault's scope ended). The change gpuctl lost
  // contact with is still running on worker1: let it end, then re-run.
  Release("worker1");
  ASSERT_TRUE(PollUntil(std::chrono::seconds(60), [] { return !HoldRunning("worker1"); }));
  const Timed rerun = Gpuctl("faults.hold", "apply --yes --run-dir " + RunDir("cut-rerun"));
  EXPECT_EQ(rerun.result.status, 0) << rerun.result.out;
  const Timed check = Gpuctl("faults.hold", "check");
  EXPECT_EQ(check.result.status, 0) << check.result.out;
  const bool took_over = rerun.result.out.find("taking over a lock") != std::string::npos;
  Record("worker1's link cut for good during faults.hold",
         fmt::format("{:.1f} s after the cut (apply exit {})", detected, status),
         "\"" + LineWith(apply->Output(), "worker1", "error:") + "\"",
         fmt::format("{} once the link is back: re-run exit {} in {:.1f} s{}, check exit {}",
                     rerun.result.status == 0 && check.result.status == 0 ? "yes" : "no",
                     rerun.result.status, rerun.seconds,
                     took_over ? " (took over the lost run's lock)" : "", check.result.status));
}

TEST_F(FaultsLabTest, ANodeThatNeverComesBackFromItsRebootIsReportedAndTheOthersGoOn) {
  // gpu.nouveau-blacklist reboots each GPU node (worker1, worker2). Through a
  // pseudo-terminal, as an admin runs it: the output is read as it comes.
  const std::string dir = RunDir("no-return");
  auto apply = StartApply("gpu.nouveau-blacklist", dir, {"--reboot-timeout", "30"},
                          Background::Terminal::kPty);
  ASSERT_TRUE(apply->started());
  ASSERT_TRUE(apply->WaitForLine({"worker1", "rebooting"}, std::chrono::seconds(180)))
      << apply->Output();
  const auto off = Clock::now();
  const Result stop = Shell(lab_->Tool("stop worker1") + " 2>&1");
  EXPECT_EQ(stop.status, 0) << stop.out;
  EXPECT_TRUE(PollUntil(std::chrono::seconds(300), [&] {
    return !NodeFailure(dir, "worker1").empty();
  })) << apply->Output();
  const double detected = SecondsSince(off);
  const int status = apply->Wait();
  const std::string output = apply->Output();
  const std::string reported = LineWith(output, "worker1", "did not come back from reboot");

  EXPECT_EQ(status, 1) << output;
  EXPECT_NE(reported, "") << output;
  EXPECT_NE(NodeFailure(dir, "worker1").find("did not come back from reboot"), std::string::npos);
  // worker2 rebooted, came back and was verified.
  EXPECT_NE(LineWith(output, "worker2", "back after reboot"), "") << output;
  EXPECT_NE(LineWith(output, "worker2", "applied"), "") << output;
  EXPECT_EQ(NodeFailure(dir, "worker2"), "");

  // Powered on again, worker1 needs nothing more: its change was done
  // before the reboot, and the re-run's probe sees it.
  const Result start = Shell(lab_->Tool("start worker1 --wait") + " 2>&1");
  ASSERT_EQ(start.status, 0) << start.out;
  const Timed rerun =
      Gpuctl("gpu.nouveau-blacklist", "apply --yes --run-dir " + RunDir("no-return-rerun"));
  EXPECT_EQ(rerun.result.status, 0) << rerun.result.out;
  const Timed check = Gpuctl("gpu.nouveau-blacklist", "check");
  EXPECT_EQ(check.result.status, 0) << check.result.out;
  Record(
      "worker1 powered off once its reboot starts (--reboot-timeout 30)",
      fmt::format("{:.1f} s after power-off (apply exit {})", detected, status),
      "\"" + reported + "\"; worker2 rebooted and was verified",
      fmt::format("{} once powered on: re-run exit {} ({} changes), check exit {}",
                  rerun.result.status == 0 && check.result.status == 0 ? "yes" : "no",
                  rerun.result.status, ChangesIn(RunDir("no-return-rerun")), check.result.status));
}

TEST_F(FaultsLabTest, ALossyLinkSlowsPlanApplyAndCheckButTheyConverge) {
  const std::string only = "os.modules,os.sysctl,os.hosts";
  // Undoes what those steps write, so each apply below has the same work.
  const auto undo = [] {
    for (const test::LabNode& node : lab_->nodes()) {
      ASSERT_EQ(lab_->Ssh(node.name,
                          "rm -f /etc/modules-load.d/gpuctl-k8s.conf /etc/sysctl.d/90-gpuctl.conf "
                          "&& sed -i '/^# BEGIN gpuctl$/,/^# END gpuctl$/d' /etc/hosts")
                    .status,
                0)
          << node.name;
    }
  };
  struct Round {
    Timed plan, apply, check;
    int changes = 0;
  };
  const auto round = [&](const std::string& name) {
    Round r;
    r.plan = Gpuctl(only, "plan");
    r.apply = Gpuctl(only, "apply --yes --run-dir " + RunDir(name));
    r.check = Gpuctl(only, "check");
    r.changes = ChangesIn(RunDir(name));
    return r;
  };
  undo();
  const Round clean = round("lossy-clean");
  undo();
  Round lossy;
  long dropped = 0;
  {
    std::vector<std::string> all;
    for (const test::LabNode& node : lab_->nodes()) all.push_back(node.name);
    NetFault loss(all, "numgen random mod 100 < 5 counter drop");
    lossy = round("lossy");
    dropped = loss.Dropped();
  }
  for (const Round* r : {&clean, static_cast<const Round*>(&lossy)}) {
    EXPECT_EQ(r->plan.result.status, 2) << r->plan.result.out;
    EXPECT_EQ(r->apply.result.status, 0) << r->apply.result.out;
    EXPECT_EQ(r->check.result.status, 0) << r->check.result.out;
  }
  EXPECT_EQ(lossy.changes, clean.changes);
  EXPECT_GT(dropped, 0) << "the loss rules dropped nothing";
  const Timed after = Gpuctl(only, "plan");
  EXPECT_EQ(after.result.status, 0) << after.result.out;
  const auto figures = [](const Round& r) {
    return fmt::format("plan {:.1f} s, apply {:.1f} s ({} changes), check {:.1f} s", r.plan.seconds,
                       r.apply.seconds, r.changes, r.check.seconds);
  };
  Record("5 % of packets dropped both ways on every node (os.modules, os.sysctl, os.hosts)",
         fmt::format("no failure; {} packets dropped", dropped),
         "lossy: " + figures(lossy) + "; clean: " + figures(clean),
         fmt::format("{} (exits: plan {}, apply {}, check {}; plan afterwards {})",
                     lossy.apply.result.status == 0 && after.result.status == 0 ? "yes" : "no",
                     lossy.plan.result.status, lossy.apply.result.status, lossy.check.result.status,
                     after.result.status));
}

TEST_F(FaultsLabTest, GpuctlKilledWhileDpkgRunsIsTakenOverByTheNextRun) {
  // os.time-server installs chrony on master1 (Ubuntu-like: apt and dpkg).
  const std::string dir = RunDir("killed");
  auto apply = StartApply("os.time-server", dir, {});
  ASSERT_TRUE(apply->started());
  // dpkg as apt runs it to install (with --status-fd), not apt's own quick
  // dpkg queries. Polled from the host's /proc, every 50 ms.
  bool in_dpkg = false;
  const auto deadline = Clock::now() + std::chrono::seconds(300);
  while (Clock::now() < deadline && !in_dpkg && !apply->Ended()) {
    in_dpkg = Running("master1", "/usr/bin/dpkg", "--status-fd");
    if (!in_dpkg) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(in_dpkg) << "dpkg never ran on master1\n" << apply->Output();
  apply->Signal(SIGKILL);
  const int status = apply->Wait();
  const bool dpkg_outlived = Running("master1", "/usr/bin/dpkg");
  EXPECT_EQ(status, 128 + SIGKILL);

  // Nothing ends the change gpuctl left behind (no terminal, so no SIGHUP):
  // apt and dpkg finish on the node. The re-run comes after it.
  const auto killed = Clock::now();
  EXPECT_TRUE(PollUntil(std::chrono::seconds(300), [] { return !Running("master1", "sh -s"); }));
  const double orphan = SecondsSince(killed);
  const std::string audit_before = On("master1", "dpkg --audit");

  const Timed rerun = Gpuctl("os.time-server", "apply --yes --run-dir " + RunDir("killed-rerun"));
  EXPECT_EQ(rerun.result.status, 0) << rerun.result.out;
  const std::string takeover = LineWith(rerun.result.out, "master1", "taking over a lock");
  EXPECT_NE(takeover, "") << rerun.result.out;
  EXPECT_EQ(On("master1", "dpkg --audit"), "");
  EXPECT_EQ(On("master1", "dpkg-query -W -f='${Status}' chrony"), "install ok installed");
  const Timed check = Gpuctl("os.time-server", "check");
  EXPECT_EQ(check.result.status, 0) << check.result.out;
  const bool repaired = rerun.result.out.find("repairing") != std::string::npos;
  Record("gpuctl SIGKILLed while dpkg installs chrony on master1",
         fmt::format("by the next run (exit {} for the killed one); dpkg {} the kill, and the "
                     "left-behind change ended {:.1f} s later; dpkg --audit {}",
                     status, dpkg_outlived ? "outlived" : "died with", orphan,
                     audit_before.empty() ? "then empty" : "then listed: " + audit_before),
         "\"" + takeover + "\"" + (repaired ? "; pkg_install repaired dpkg" : ""),
         fmt::format("{}: re-run exit {} in {:.1f} s ({} changes), check exit {}, dpkg --audit "
                     "empty",
                     rerun.result.status == 0 && check.result.status == 0 ? "yes" : "no",
                     rerun.result.status, rerun.seconds, ChangesIn(RunDir("killed-rerun")),
                     check.result.status));
}

TEST_F(FaultsLabTest, CtrlCDuringARollingRebootStartsNoOtherRebootAndEndsTheWait) {
  // Both GPU workers need gpu.nouveau-blacklist (and so a reboot) again. A
  // file in /run (a tmpfs the node's boot starts empty) tells whether a node
  // really rebooted.
  const std::vector<std::string> workers = {"worker1", "worker2"};
  for (const std::string& w : workers) {
    On(w, "rm -f /etc/modprobe.d/blacklist-nouveau.conf; touch /run/gpuctl-ctrl-c-test");
  }
  const auto rebooted = [&](const std::string& w) {
    return On(w, "test -e /run/gpuctl-ctrl-c-test && echo kept || echo gone") == "gone";
  };
  const std::string dir = RunDir("ctrl-c");
  auto apply =
      StartApply("gpu.nouveau-blacklist", dir, {"--batch", "1"}, Background::Terminal::kPty);
  ASSERT_TRUE(apply->started());
  // The first node of the batch is down; Ctrl-C as an admin types it.
  ASSERT_TRUE(apply->WaitForLine({"rebooting"}, std::chrono::seconds(180))) << apply->Output();
  const std::string first =
      LineWith(apply->Output(), "worker1", "rebooting").empty() ? "worker2" : "worker1";
  const std::string second = first == "worker1" ? "worker2" : "worker1";
  const auto pressed = Clock::now();
  ASSERT_TRUE(apply->Type("\x03"));
  const int status = apply->Wait();
  const double ended = SecondsSince(pressed);
  const std::string output = apply->Output();

  EXPECT_EQ(status, 130) << output;
  // Said before anything changed: what reboots, and how many at once.
  EXPECT_NE(output.find("[reboots]"), std::string::npos) << output;
  EXPECT_NE(output.find("Reboots: 2 nodes (worker1, worker2); at most 1 at a time (--batch)"),
            std::string::npos)
      << output;
  // The other node's reboot never started; the first node's wait ended.
  const std::string cancelled = LineWith(output, second, "reboot cancelled");
  EXPECT_NE(cancelled, "") << output;
  const std::string not_back = LineWith(output, first, "rebooting, not yet back");
  const bool came_back_first = !LineWith(output, first, "back after reboot").empty();
  EXPECT_TRUE(!not_back.empty() || came_back_first) << output;
  // Ctrl-C can come while the first node is still shutting down, its sshd
  // still answering: wait until it is back from the reboot itself (its /run
  // marker gone), as gpuctl does.
  ASSERT_TRUE(PollUntil(std::chrono::seconds(180),
                        [&] { return lab_->Ssh(first, "true").status == 0 && rebooted(first); }))
      << first << " never came back from its reboot";
  EXPECT_FALSE(rebooted(second)) << second << " rebooted although Ctrl-C came before its turn";

  // A plain re-run finishes the job, still one node at a time.
  const Timed rerun =
      Gpuctl("gpu.nouveau-blacklist", "apply --yes --batch 1 --run-dir " + RunDir("ctrl-c-rerun"));
  EXPECT_EQ(rerun.result.status, 0) << rerun.result.out;
  EXPECT_TRUE(rebooted(second));
  const Timed check = Gpuctl("gpu.nouveau-blacklist", "check");
  EXPECT_EQ(check.result.status, 0) << check.result.out;
  Record("Ctrl-C through a pseudo-terminal while the first node of a --batch 1 reboot is down",
         fmt::format("gpuctl exited {} {:.1f} s after Ctrl-C", status, ended),
         "\"" + cancelled + "\"; \"" + (not_back.empty() ? "back after reboot" : not_back) +
             "\"; " + second + " not rebooted",
         fmt::format("{}: re-run with --batch 1 exit {} in {:.1f} s, check exit {}",
                     rerun.result.status == 0 && check.result.status == 0 ? "yes" : "no",
                     rerun.result.status, rerun.seconds, check.result.status));
}

}  // namespace
}  // namespace gpuctl
