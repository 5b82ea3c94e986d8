// Shared by the lab tests: run a command, bring a lab up and down, reach its
// nodes over the real sshd, and say why lab tests cannot run here.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpuctl::test {

namespace fs = std::filesystem;

struct Result {
  int status = -1;  // exit status, or -1 if the command could not run
  std::string out;  // stdout (stderr goes to the test log)
};

// With GPUCTL_LAB_TIMES naming a file, each command's wall time is
// appended there: where a lab test's minutes go, without a profiler.
inline Result Shell(const std::string& command) {
  Result result;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (const char* times = std::getenv("GPUCTL_LAB_TIMES"); times != nullptr && *times != '\0') {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::ofstream(times, std::ios::app)
        << std::fixed << std::setprecision(1) << took.count() << " s\t"
        << (test != nullptr ? test->name() : "-") << "\t" << command.substr(0, 200) << "\n";
  }
  return result;
}

inline std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// Single-quotes a string for sh.
inline std::string Quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

inline std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Polls `done` until it is true or `deadline` passes.
template <typename Predicate>
inline bool PollUntil(std::chrono::seconds deadline, Predicate done) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return done();
}

struct LabNode {
  std::string name;
  std::string address;
  std::string os;
};

class Lab {
 public:
  explicit Lab(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string Tool(const std::string& args) const {
    return Quote(std::string(GPUCTL_SOURCE_DIR) + "/lab/gpuctl-lab") + " --name " + name_ + " " +
           args;
  }

  bool Up(std::string* log, const std::string& shape = "--nodes 3 --rocky 1") {
    const Result up = Shell(Tool("up " + shape + " --timeout 180") + " 2>&1");
    *log = up.out;
    if (up.status != 0) return false;
    std::istringstream env(Shell(Tool("env")).out);
    for (std::string line; std::getline(env, line);) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) env_[line.substr(0, eq)] = line.substr(eq + 1);
    }
    // A lab with login users (up --sudo-users): its inventory names this
    // variable for the password sudo asks the rocky user for.
    if (const std::string file = Env("LAB_SUDO_PASSWORD_FILE"); !file.empty()) {
      setenv("GPUCTL_LAB_SUDO_PASSWORD", Trim(ReadFile(file)).c_str(), 1);
    }
    std::istringstream table(ReadFile(fs::path(env_["LAB_STATE"]) / "nodes.tsv"));
    for (std::string line; std::getline(table, line);) {
      std::istringstream fields(line);
      LabNode node;
      std::getline(fields, node.name, '\t');
      std::getline(fields, node.address, '\t');
      std::getline(fields, node.os, '\t');
      nodes_.push_back(node);
    }
    return !nodes_.empty();
  }

  Result Down(bool purge) const { return Shell(Tool(purge ? "down --purge" : "down") + " 2>&1"); }

  // Runs a command on a node through the real sshd, with the lab's key and
  // known_hosts and strict host-key checking.
  [[nodiscard]] Result Ssh(const std::string& node, const std::string& command) const {
    return Shell("ssh -i " + Quote(Env("LAB_KEY")) +
                 " -o UserKnownHostsFile=" + Quote(Env("LAB_KNOWN_HOSTS")) +
                 " -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=5"
                 " -o LogLevel=ERROR root@" +
                 Node(node).address + " " + Quote(command));
  }

  [[nodiscard]] const LabNode& Node(const std::string& name) const {
    for (const LabNode& node : nodes_) {
      if (node.name == name) return node;
    }
    static const LabNode kNone;
    return kNone;
  }

  [[nodiscard]] std::string Env(const std::string& key) const {
    const auto it = env_.find(key);
    return it == env_.end() ? std::string() : it->second;
  }

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::vector<LabNode>& nodes() const { return nodes_; }

 private:
  std::string name_;
  std::map<std::string, std::string> env_;
  std::vector<LabNode> nodes_;
};

// Why lab tests cannot run here, or empty if they can. Every reason starts
// with kCannotRunHere, which ctest's skip expression matches
// (tests/CMakeLists.txt): no other output may contain it.
inline constexpr const char* kCannotRunHere = "lab tests cannot run here: ";
inline std::string MissingPrerequisite() {
  const std::string why = [] {
    if (geteuid() != 0) return "they need root (network namespaces, mounts)";
    if (Shell("ip netns list >/dev/null 2>&1").status != 0) return "`ip netns` is unavailable";
    if (Shell("unshare --mount --pid --fork true >/dev/null 2>&1").status != 0) {
      return "unshare cannot create mount and pid namespaces here";
    }
    if (!fs::exists("/lib/systemd/systemd") || Shell("command -v sshd >/dev/null").status != 0) {
      return "systemd or sshd missing: run scripts/install-deps.sh lab";
    }
    return "";
  }();
  return why.empty() ? why : kCannotRunHere + why;
}

// Change commands a run sent, from the journal in its run directory.
inline int ChangesIn(const std::string& run_dir) {
  std::ifstream in(std::filesystem::path(run_dir) / "journal.jsonl");
  int changes = 0;
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.value("event", "") == "start" &&
        e.value("activity", "") == "change") {
      ++changes;
    }
  }
  return changes;
}

// Every gpuctl this test process starts works on `only` (GPUCTL_ONLY, the
// --only option): its steps and what they depend on. Empty: everything.
inline void OnlySteps(const std::string& only) {
  if (only.empty()) {
    unsetenv("GPUCTL_ONLY");
  } else {
    setenv("GPUCTL_ONLY", only.c_str(), 1);
  }
}

// A lab brought up for one test case and purged after it, with gpuctl run
// against its inventory. `Shape()` picks the lab ("--profile mixed", ...).
class LabCase : public ::testing::Test {
 protected:
  virtual std::string Shape() const { return "--profile mixed"; }
  virtual std::string Prefix() const { return "t"; }
  // The catalog part this case works on (gpuctl --only): its steps and what
  // they depend on; empty: the whole catalog.
  virtual std::string Only() const { return ""; }

  void SetUp() override {
    if (const std::string why = MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    OnlySteps(Only());
    lab_ = std::make_unique<Lab>(Prefix() + std::to_string(getpid()));
    std::string log;
    ASSERT_TRUE(lab_->Up(&log, Shape())) << log;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
  }
  void TearDown() override {
    if (lab_ == nullptr) return;
    // GPUCTL_LAB_KEEP_RUNS: the runs' journals outlive the purge, to be
    // read for step timings.
    if (const char* keep = std::getenv("GPUCTL_LAB_KEEP_RUNS"); keep != nullptr && *keep != '\0') {
      std::error_code ignored;
      fs::create_directories(keep, ignored);
      fs::copy(runs_, fs::path(keep) / lab_->name(), fs::copy_options::recursive, ignored);
    }
    lab_->Down(/*purge=*/true);
  }

  // gpuctl ARGS INVENTORY, stdout and stderr together, no stdin.
  Result Gpuctl(const std::string& args) const {
    return Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " " + args + " " +
                 Quote(lab_->Env("LAB_INVENTORY")) + " 2>&1 </dev/null");
  }
  std::string RunDir(const std::string& name) const { return (runs_ / name).string(); }

  std::unique_ptr<Lab> lab_;
  fs::path runs_;
};

}  // namespace gpuctl::test
