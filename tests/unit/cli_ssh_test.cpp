// The gpuctl binary against a real sshd on localhost: plan's probes cross SSH,
// exit codes are the documented ones, host keys are enforced, and apply
// changes, verifies, and then has nothing left to do.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/local_sshd.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

struct SshCliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

SshCliRun SshGpuctl(const std::string& args, const std::string& playbooks) {
  const std::string command = fmt::format(
      "GPUCTL_PLAYBOOKS='{}' NO_COLOR=1 '{}' {} 2>&1 </dev/null", playbooks, GPUCTL_BINARY, args);
  SshCliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.output.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

void SshWriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class CliSshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::LocalSshd::Unavailable(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    sshd_ = std::make_unique<test::LocalSshd>();
    sshd_->Start();
    sshd_->TrustHostKey();
    dir_ = fs::path(sshd_->dir()) / "cli";
    marker_ = (dir_ / "changed-by-apply").string();
    // `ssh.ok` is always satisfied; `ssh.proof` reports the SSH connection it
    // ran over, and needs a change until the marker file exists.
    SshWriteFile(dir_ / "playbooks/10-test.yaml", fmt::format(R"(steps:
  - id: ssh.ok
    description: always satisfied
    roles: [master]
    probe: |
      exit 0
    change:
      any: |
        exit 0
  - id: ssh.proof
    description: shows the probe really ran over SSH
    roles: [master]
    depends: [ssh.ok]
    probe: |
      if [ -f '{0}' ]; then exit 0; fi
      # SSH_CONNECTION is "client port server port", set only by sshd; the
      # client port changes per connection, so only the server half is shown.
      set -- ${{SSH_CONNECTION:-none none none none}}
      echo "over ssh: to $3 port $4"
      exit 1
    change:
      any: |
        echo changed > '{0}'
)",
                                                              marker_));
    WriteInventory(sshd_->known_hosts());
  }

  void WriteInventory(const std::string& known_hosts) {
    SshWriteFile(dir_ / "inventory.yaml",
                 fmt::format(R"(cluster: local
ssh:
  user: root
  port: {}
  identity_file: {}
  known_hosts: {}
  connect_timeout: 5
nodes:
  - name: master1
    address: 127.0.0.1
    os: auto  # the node is this host: whatever its os-release says
    roles: [master]
)",
                             sshd_->port(), sshd_->client_key(), known_hosts));
  }

  std::string Inventory() const { return (dir_ / "inventory.yaml").string(); }
  std::string Playbooks() const { return (dir_ / "playbooks").string(); }

  std::unique_ptr<test::LocalSshd> sshd_;
  fs::path dir_;
  std::string marker_;
};

TEST_F(CliSshTest, PlanProbesOverSshAndExitsTwoWhenChangesArePending) {
  const SshCliRun run =
      SshGpuctl("plan " + Inventory() + " --out " + (dir_ / "plan.json").string(), Playbooks());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(
      run.output.find(fmt::format("~ ssh.proof                      will change: over ssh: to "
                                  "127.0.0.1 port {}",
                                  sshd_->port())),
      std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("Plan: 1 node: 1 to change, 1 ok"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(marker_)) << "plan must not run a change";

  std::ifstream in(dir_ / "plan.json");
  const auto plan = nlohmann::json::parse(in);
  EXPECT_EQ(plan["format"], "gpuctl.plan/v2");
  ASSERT_EQ(plan["items"].size(), 2U);
  EXPECT_EQ(plan["items"][1]["state"], "change");
  EXPECT_EQ(sshd_->CountInLog("Accepted publickey"), 1) << "one session for every probe";
}

TEST_F(CliSshTest, PlanExitsZeroWhenNothingIsPending) {
  SshWriteFile(marker_, "already\n");
  const SshCliRun run = SshGpuctl("plan " + Inventory(), Playbooks());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("Plan: 1 node: 0 to change, 2 ok"), std::string::npos) << run.output;
}

TEST_F(CliSshTest, PlanJsonOutputIsMachineReadable) {
  const SshCliRun run = SshGpuctl("--output json plan " + Inventory(), Playbooks());
  EXPECT_EQ(run.exit_code, 2);
  const auto doc = nlohmann::json::parse(run.output.substr(run.output.find('{')));
  EXPECT_EQ(doc["summary"]["to_change"], 1);
  EXPECT_EQ(doc["summary"]["ok"], 1);
}

TEST_F(CliSshTest, UnknownHostKeyIsRefusedUntilTrustedExplicitly) {
  const std::string empty = (dir_ / "empty_known_hosts").string();
  SshWriteFile(empty, "");
  WriteInventory(empty);
  const SshCliRun refused = SshGpuctl("plan " + Inventory(), Playbooks());
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("--trust-new-host-keys"), std::string::npos) << refused.output;
  EXPECT_EQ(sshd_->CountInLog("Accepted publickey"), 0) << "no command may run on an unknown host";

  const SshCliRun trusted = SshGpuctl("plan --trust-new-host-keys " + Inventory(), Playbooks());
  EXPECT_EQ(trusted.exit_code, 2) << trusted.output;
  const SshCliRun later = SshGpuctl("plan " + Inventory(), Playbooks());
  EXPECT_EQ(later.exit_code, 2) << "the key was recorded: " << later.output;
}

TEST_F(CliSshTest, ChangedHostKeyIsRefused) {
  sshd_->Stop();
  sshd_->RegenerateHostKey();
  sshd_->Start();
  const SshCliRun run = SshGpuctl("plan --trust-new-host-keys " + Inventory(), Playbooks());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find(sshd_->HostKeyFingerprint()), std::string::npos) << run.output;
}

TEST_F(CliSshTest, ApplyInJsonPrintsOneDocumentOnStdoutAndTheRestOnStderr) {
  // stdout alone: what a script parses. stderr goes to a file beside the
  // run directory, shown when an expectation fails.
  const auto stdout_of = [&](const std::string& run) {
    const std::string command = fmt::format(
        "GPUCTL_PLAYBOOKS='{}' '{}' apply -o json --yes '{}' --run-dir '{}' "
        "2>'{}' </dev/null",
        Playbooks(), GPUCTL_BINARY, Inventory(), (dir_ / run).string(),
        (dir_ / (run + ".stderr")).string());
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    char buffer[4096];
    std::size_t n = 0;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
    pclose(pipe);
    return out;
  };
  const auto stderr_of = [&](const std::string& run) {
    std::ifstream in(dir_ / (run + ".stderr"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str() + "\nsshd's log:\n" + sshd_->Log();
  };
  const auto first = nlohmann::json::parse(stdout_of("json1"));  // throws if not one document
  EXPECT_EQ(first["format"], "gpuctl.apply/v1");
  EXPECT_EQ(first["outcome"], "applied") << stderr_of("json1");
  EXPECT_EQ(first["exit_code"], 0);
  EXPECT_EQ(first["plan"]["format"], "gpuctl.plan/v2");
  EXPECT_EQ(first["plan"]["summary"]["applied"], 1);
  EXPECT_EQ(first["journal"], (dir_ / "json1/journal.jsonl").string());
  const auto second = nlohmann::json::parse(stdout_of("json2"));
  EXPECT_EQ(second["outcome"], "nothing to change") << second.dump() << "\n" << stderr_of("json2");
}

TEST_F(CliSshTest, ApplyChangesVerifiesAndASecondApplyChangesNothing) {
  const SshCliRun first = SshGpuctl(
      "apply --yes " + Inventory() + " --run-dir " + (dir_ / "run1").string(), Playbooks());
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_TRUE(fs::exists(marker_));
  // The progress line, and the recap's count.
  EXPECT_NE(first.output.find("ssh.proof                    applied"), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("Apply complete in"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find(": 1 changed, 0 failed, 0 blocked on 1 node."), std::string::npos)
      << first.output;
  EXPECT_TRUE(fs::exists(dir_ / "run1/journal.jsonl"));

  const SshCliRun second = SshGpuctl(
      "apply --yes " + Inventory() + " --run-dir " + (dir_ / "run2").string(), Playbooks());
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("No changes."), std::string::npos) << second.output;
  std::ifstream journal(dir_ / "run2/journal.jsonl");
  std::string line;
  while (std::getline(journal, line)) {
    EXPECT_EQ(line.find("\"activity\":\"change\""), std::string::npos) << line;
  }
}

TEST_F(CliSshTest, ApplyWithoutATerminalOrYesRefusesToWait) {
  const SshCliRun run = SshGpuctl("apply " + Inventory(), Playbooks());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("stdin is not a terminal"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(marker_));
}

TEST_F(CliSshTest, SavedPlanIsRefusedAfterTheNodeMoved) {
  const std::string saved = (dir_ / "saved.json").string();
  ASSERT_EQ(SshGpuctl("plan " + Inventory() + " --out " + saved, Playbooks()).exit_code, 2);
  SshWriteFile(marker_, "made by hand\n");  // drift: someone fixed it meanwhile
  const SshCliRun run = SshGpuctl("apply " + saved, Playbooks());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("master1 ssh.proof: was change (over ssh: to 127.0.0.1"),
            std::string::npos)
      << run.output;
}

TEST_F(CliSshTest, SavedPlanAppliesExactlyWhenNothingMoved) {
  const std::string saved = (dir_ / "saved.json").string();
  ASSERT_EQ(SshGpuctl("plan " + Inventory() + " --out " + saved, Playbooks()).exit_code, 2);
  const SshCliRun run =
      SshGpuctl("apply " + saved + " --run-dir " + (dir_ / "run").string(), Playbooks());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::exists(marker_));
}

TEST_F(CliSshTest, CheckListsTheMismatchAndExitsTwo) {
  const SshCliRun run = SshGpuctl("check " + Inventory(), Playbooks());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("master1: over ssh: to 127.0.0.1"), std::string::npos) << run.output;
  SshWriteFile(marker_, "x\n");
  EXPECT_EQ(SshGpuctl("check " + Inventory(), Playbooks()).exit_code, 0);
}

// Piped stdout (a CI log, `| tee`) gets each line when it is written, not
// when something else happens to flush it: apply prints its plan, then waits
// in a change for a line that this test writes only once it has read the
// plan from the pipe. Held back, the plan would come only when the change
// gave up (stderr's "failed" line flushes stdout: std::cerr is tied to
// std::cout) and the step would fail.
TEST_F(CliSshTest, PipedOutputArrivesLineByLineWhileApplyRuns) {
  // The test holds the gate FIFO open at both ends, so the change's `head`
  // opens it at once and waits for a line; `timeout` bounds a broken run to a
  // minute instead of a hang. --only: another step's "applied" line on
  // stderr would flush stdout too and hide the fault.
  const fs::path gate = dir_ / "gate";
  const fs::path released = dir_ / "released";
  ASSERT_EQ(mkfifo(gate.c_str(), 0600), 0);
  const int gate_fd = open(gate.c_str(), O_RDWR);
  ASSERT_GE(gate_fd, 0);
  SshWriteFile(dir_ / "playbooks/20-gate.yaml", fmt::format(R"yaml(steps:
  - id: pipe.gate
    description: waits for the test before it changes anything
    roles: [master]
    probe: |
      if [ "$(cat '{1}' 2>/dev/null)" = go ]; then exit 0; fi
      exit 1
    change:
      any: |
        timeout 60 head -n 1 '{0}' >'{1}'
)yaml",
                                                            gate.string(), released.string()));
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const std::string command = fmt::format(
      "GPUCTL_PLAYBOOKS='{}' NO_COLOR=1 exec '{}' --only pipe.gate apply --yes '{}' "
      "--run-dir '{}' 2>'{}' </dev/null",
      Playbooks(), GPUCTL_BINARY, Inventory(), (dir_ / "run").string(), (dir_ / "stderr").string());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    close(gate_fd);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  const auto read_some = [&](std::string& into) {
    char buffer[4096];
    const ssize_t n = read(out[0], buffer, sizeof(buffer));
    if (n > 0) into.append(buffer, static_cast<std::size_t>(n));
    return n > 0;
  };

  // Blocks until gpuctl writes its first line.
  std::string first;
  while (first.find('\n') == std::string::npos && read_some(first)) {
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WNOHANG), 0) << "gpuctl exited before its first line came";
  EXPECT_TRUE(first.starts_with("master1  127.0.0.1")) << first;  // the plan's node line
  EXPECT_EQ(first.find("Journal:"), std::string::npos) << "all of it came at once: " << first;

  ASSERT_EQ(write(gate_fd, "go\n", 3), 3);
  std::string rest;
  while (read_some(rest)) {
  }
  close(out[0]);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  close(gate_fd);
  std::stringstream err;
  err << std::ifstream(dir_ / "stderr").rdbuf();
  std::stringstream got;
  got << std::ifstream(released).rdbuf();
  // The change took the test's line: the plan was read while it waited.
  EXPECT_EQ(got.str(), "go\n") << "the plan reached the pipe only after the change gave up\n"
                               << first << rest << err.str();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << first << rest << err.str();
  EXPECT_NE(rest.find("Journal:"), std::string::npos) << rest;
}

TEST(CliValidate, ReportsEveryErrorAndExitsOne) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("gpuctl-validate-{}", getpid());
  SshWriteFile(dir / "bad.yaml",
               "cluster: x\nnodes:\n  - name: a\n    adress: 1.2.3.4\n    os: centos-7\n    roles: "
               "[master]\n");
  const SshCliRun run = SshGpuctl("validate " + (dir / "bad.yaml").string(),
                                  std::string(GPUCTL_SOURCE_DIR) + "/playbooks");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("bad.yaml:4:5: error: unknown key 'adress' (did you mean 'address'?)"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("bad.yaml:5:9: error: centos-7 is end of life"), std::string::npos)
      << run.output;
  fs::remove_all(dir);
}

TEST(CliValidate, ShippedInventoriesAreValid) {
  for (const char* name : {"seed", "mixed", "slurm"}) {
    const SshCliRun run =
        SshGpuctl(fmt::format("validate {}/inventories/{}.yaml", GPUCTL_SOURCE_DIR, name),
                  std::string(GPUCTL_SOURCE_DIR) + "/playbooks");
    EXPECT_EQ(run.exit_code, 0) << name << ": " << run.output;
  }
}

}  // namespace
}  // namespace gpuctl
