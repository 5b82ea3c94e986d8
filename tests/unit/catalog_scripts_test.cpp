// `gpuctl catalog --scripts DIR`: every script of the catalog as a file for
// shellcheck and the duplicate finder (scripts/lint-steps.sh), sourcing what
// a node runs before it.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Two scripts per family, an input, a verify and a common: in one step.
const char* const kScriptsStep = R"(steps:
  - id: net.mtu
    roles: [worker]
    inputs:
      - name: peer
        script: cat /etc/peer
    common: |
      conf=/etc/net/mtu.conf
      line="mtu 9000"
    probe: |
      file_is "$conf" "$line"
    change:
      apt: |
        write_file "$conf" "$line"
      dnf: |
        write_file "$conf" "$line"; ip link set dev eth0 mtu 9000
    verify: |
      ip link show dev eth0 | grep -q "mtu 9000"
)";

// `gpuctl --playbooks PLAYBOOKS catalog --scripts DIR`: its exit status and output.
struct CliRun {
  int status = -1;
  std::string out;
};

CliRun Gpuctl(const fs::path& playbooks, const fs::path& dir) {
  const std::string command = fmt::format(
      "env -u GPUCTL_PLAYBOOKS '{}' --playbooks '{}' catalog --scripts '{}' </dev/null 2>&1",
      GPUCTL_BINARY, playbooks.string(), dir.string());
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return run;
  }
  char buffer[4096];
  for (std::size_t n = 0; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    run.out.append(buffer, n);
  }
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class CatalogScripts : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("gpuctl-scripts-{}-{}", getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "playbooks");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(CatalogScripts, EveryScriptAFileThatSourcesWhatRunsBeforeIt) {
  std::ofstream(root_ / "playbooks" / "prelude.sh") << "file_is() { :; }\n";
  // b shares a's scripts through YAML anchors: the same text runs twice.
  std::ofstream(root_ / "playbooks" / "10-a.yaml") << kScriptsStep << R"(  - id: a.one
    roles: [worker]
    probe: &p |
      test -e /x
    change: {any: &c "touch /x"}
  - id: a.two
    roles: [worker]
    probe: *p
    change: {any: *c}
)";
  const fs::path dir = root_ / "out";
  const CliRun run = Gpuctl(root_ / "playbooks", dir);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, fmt::format("11 scripts in {}\n", dir.string()));

  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  EXPECT_EQ(names,
            (std::set<std::string>{
                "prelude.sh", "net.mtu.common.sh", "net.mtu.probe.sh", "net.mtu.change-apt.sh",
                "net.mtu.change-dnf.sh", "net.mtu.verify.sh", "net.mtu.input.peer.sh",
                "a.one.probe.sh", "a.one.change-any.sh", "a.two.probe.sh", "a.two.change-any.sh"}));
  EXPECT_EQ(Slurp(dir / "prelude.sh"), "file_is() { :; }\n");

  const std::string common = Slurp(dir / "net.mtu.common.sh");
  EXPECT_THAT(common, StartsWith("#!/bin/sh\n"));
  EXPECT_THAT(common, HasSubstr("# shellcheck source-path=SCRIPTDIR source=prelude.sh\n"
                                ". ./prelude.sh\n"
                                "conf=/etc/net/mtu.conf\n"));
  const std::string probe = Slurp(dir / "net.mtu.probe.sh");
  EXPECT_THAT(probe, StartsWith("#!/bin/sh\n# gpuctl step net.mtu: its probe (10-a.yaml:2)"));
  // One line ahead of its own: the common: file sources the prelude.
  EXPECT_THAT(probe, HasSubstr("\n# shellcheck source-path=SCRIPTDIR source=net.mtu.common.sh\n"
                               ". ./net.mtu.common.sh\nfile_is \"$conf\" \"$line\"\n"));
  EXPECT_THAT(probe, Not(HasSubstr("prelude.sh\n")));
  // The common part is in its own file only.
  EXPECT_THAT(probe, Not(HasSubstr("line=")));
  EXPECT_THAT(Slurp(dir / "net.mtu.change-dnf.sh"), HasSubstr("ip link set dev eth0 mtu 9000\n"));
  EXPECT_THAT(Slurp(dir / "net.mtu.verify.sh"), HasSubstr("\nip link show dev eth0 | grep"));
  const std::string input = Slurp(dir / "net.mtu.input.peer.sh");
  EXPECT_THAT(input, HasSubstr(". ./prelude.sh\ncat /etc/peer\n"));
  EXPECT_THAT(input, Not(HasSubstr("common")));

  // a.two runs what a.one runs: links, so only real copies look like copies.
  EXPECT_FALSE(fs::is_symlink(dir / "a.one.probe.sh"));
  ASSERT_TRUE(fs::is_symlink(dir / "a.two.probe.sh"));
  EXPECT_EQ(fs::read_symlink(dir / "a.two.probe.sh"), "a.one.probe.sh");
  EXPECT_EQ(fs::read_symlink(dir / "a.two.change-any.sh"), "a.one.change-any.sh");

  // Written once: a directory with files in it is refused, and kept.
  const CliRun again = Gpuctl(root_ / "playbooks", dir);
  EXPECT_EQ(again.status, 1);
  EXPECT_THAT(again.out, HasSubstr("not a new or empty directory"));
  EXPECT_EQ(Slurp(dir / "prelude.sh"), "file_is() { :; }\n");
}

TEST_F(CatalogScripts, TheShippedCatalogHasAProbeFileForEveryStep) {
  const fs::path dir = root_ / "out";
  const CliRun run = Gpuctl(fs::path(GPUCTL_SOURCE_DIR) / "playbooks", dir);
  ASSERT_EQ(run.status, 0) << run.out;
  Diagnostics diagnostics;
  const auto catalog = Catalog::Load(GPUCTL_PLAYBOOK_DIR, diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  for (const Step& step : catalog->steps()) {
    EXPECT_TRUE(fs::exists(dir / (step.id + ".probe.sh"))) << step.id;
    EXPECT_EQ(fs::exists(dir / (step.id + ".common.sh")), !step.common.empty()) << step.id;
  }
}

}  // namespace
}  // namespace gpuctl
