// A step's `common:` (shell its probe, changes and verify share), and
// `gpuctl catalog --scripts DIR`, which writes every script as a file for
// shellcheck and the duplicate finder.
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

#include "gpuctl/catalog.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Parsed {
  std::optional<Catalog> catalog;
  Diagnostics diagnostics;
};

Parsed ParseText(const std::string& text) {
  Parsed p;
  p.catalog = Catalog::Parse(text, "pb.yaml", p.diagnostics);
  return p;
}

const char* const kShared = R"(steps:
  - id: os.sysctl
    roles: [worker]
    inputs:
      - name: peer
        script: cat /etc/peer
    common: |
      f=/etc/sysctl.d/90-gpuctl.conf
      want="vm.swappiness = 0"
    probe: |
      file_is "$f" "$want"
    change:
      apt: |
        write_file "$f" "$want"
      dnf: |
        write_file "$f" "$want"; sysctl -p "$f"
)";

TEST(CatalogCommon, HeadsTheProbeEachChangeAndTheVerify) {
  auto p = ParseText(kShared);
  ASSERT_TRUE(p.catalog) << p.diagnostics.Format();
  const Step& s = p.catalog->steps()[0];
  const std::string common = "f=/etc/sysctl.d/90-gpuctl.conf\nwant=\"vm.swappiness = 0\"\n";
  EXPECT_EQ(s.common, common);
  EXPECT_EQ(s.probe, common + "file_is \"$f\" \"$want\"\n");
  EXPECT_EQ(*s.ChangeFor(OsFamily::kDebian), common + "write_file \"$f\" \"$want\"\n");
  EXPECT_EQ(*s.ChangeFor(OsFamily::kRhel),
            common + "write_file \"$f\" \"$want\"; sysctl -p \"$f\"\n");
  // verify defaulted to the probe: the common part once, not twice.
  EXPECT_EQ(s.verify, s.probe);
  // An input runs on another node: the step's common: is not its own.
  EXPECT_EQ(s.inputs.at(0).script, "cat /etc/peer");
}

TEST(CatalogCommon, AnExplicitVerifyGetsItToo) {
  auto p = ParseText(
      "steps:\n  - id: a\n    roles: [worker]\n    common: x=1\n    probe: test $x\n"
      "    change: {any: touch $x}\n    verify: test -f $x\n");
  ASSERT_TRUE(p.catalog) << p.diagnostics.Format();
  const Step& s = p.catalog->steps()[0];
  // A plain scalar has no newline of its own: one is added before the script.
  EXPECT_EQ(s.probe, "x=1\ntest $x");
  EXPECT_EQ(*s.ChangeFor(OsFamily::kDebian), "x=1\ntouch $x");
  EXPECT_EQ(*s.ChangeFor(OsFamily::kRhel), "x=1\ntouch $x");
  EXPECT_EQ(s.verify, "x=1\ntest -f $x");
}

std::string DigestOf(const std::string& text) {
  Diagnostics diagnostics;
  auto catalog = Catalog::Parse(text, "pb.yaml", diagnostics);
  EXPECT_TRUE(catalog) << diagnostics.Format();
  return catalog ? catalog->Digest() : "";
}

TEST(CatalogCommon, TheDigestCoversItAsTheScriptsRunIt) {
  const std::string shared =
      "steps:\n  - id: a\n    roles: [worker]\n    common: \"x=1\\n\"\n    probe: test $x\n"
      "    change: {any: touch $x}\n";
  EXPECT_NE(DigestOf(shared), "");
  std::string other = shared;
  other.replace(other.find("x=1"), 3, "x=2");
  EXPECT_NE(DigestOf(shared), DigestOf(other));
  // The same scripts written out in full are the same catalog to a saved plan.
  EXPECT_EQ(DigestOf(shared),
            DigestOf("steps:\n  - id: a\n    roles: [worker]\n    probe: \"x=1\\ntest $x\"\n"
                     "    change: {any: \"x=1\\ntouch $x\"}\n"));
}

// Passes when some error reads "pb.yaml:<line>:<column>: error: ..." with `fragment`.
::testing::AssertionResult HasError(const Diagnostics& diagnostics, int line, int column,
                                    const std::string& fragment) {
  const std::string prefix = fmt::format("pb.yaml:{}:{}: error: ", line, column);
  for (const auto& d : diagnostics.All()) {
    const std::string text = d.Format();
    if (text.rfind(prefix, 0) == 0 && text.find(fragment) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure() << "no " << prefix << "..." << fragment << " among:\n"
                                       << diagnostics.Format();
}

TEST(CatalogCommon, ErrorsAtTheirPlace) {
  auto p = ParseText(R"(steps:
  - id: a
    roles: [worker]
    common: [x]
    probe: exit 0
    change: {any: "true"}
  - id: b
    roles: [worker]
    common: "  "
    probe: exit 0
    change: {any: "true"}
  - id: c
    roles: [worker]
    comon: x=1
    probe: exit 0
    change: {any: "true"}
  - id: d
    deep: true
    roles: [master]
    common: x=1
    probe: exit 0
)");
  EXPECT_FALSE(p.catalog);
  EXPECT_TRUE(HasError(p.diagnostics, 4, 13, "expected a string, got a list"));
  EXPECT_TRUE(HasError(p.diagnostics, 9, 13, "empty common script"));
  EXPECT_TRUE(HasError(p.diagnostics, 14, 5, "unknown key 'comon' (did you mean 'common'?)"));
  EXPECT_TRUE(HasError(p.diagnostics, 20, 5, "a deep validation has no 'common'"));
}

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
  std::ofstream(root_ / "playbooks" / "10-a.yaml") << kShared << R"(    verify: |
      sysctl vm.swappiness
  - id: a.one
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
  EXPECT_EQ(names, (std::set<std::string>{"prelude.sh", "os.sysctl.common.sh", "os.sysctl.probe.sh",
                                          "os.sysctl.change-apt.sh", "os.sysctl.change-dnf.sh",
                                          "os.sysctl.verify.sh", "os.sysctl.input.peer.sh",
                                          "a.one.probe.sh", "a.one.change-any.sh", "a.two.probe.sh",
                                          "a.two.change-any.sh"}));
  EXPECT_EQ(Slurp(dir / "prelude.sh"), "file_is() { :; }\n");

  const std::string common = Slurp(dir / "os.sysctl.common.sh");
  EXPECT_THAT(common, StartsWith("#!/bin/sh\n"));
  EXPECT_THAT(common, HasSubstr("# shellcheck source-path=SCRIPTDIR source=prelude.sh\n"
                                ". ./prelude.sh\n"
                                "f=/etc/sysctl.d/90-gpuctl.conf\n"));
  const std::string probe = Slurp(dir / "os.sysctl.probe.sh");
  EXPECT_THAT(probe, StartsWith("#!/bin/sh\n# gpuctl step os.sysctl: its probe (10-a.yaml:2)"));
  // One line ahead of its own: the common: file sources the prelude.
  EXPECT_THAT(probe, HasSubstr("\n# shellcheck source-path=SCRIPTDIR source=os.sysctl.common.sh\n"
                               ". ./os.sysctl.common.sh\nfile_is \"$f\" \"$want\"\n"));
  EXPECT_THAT(probe, Not(HasSubstr("prelude.sh\n")));
  // The common part is in its own file only.
  EXPECT_THAT(probe, Not(HasSubstr("want=")));
  EXPECT_THAT(Slurp(dir / "os.sysctl.change-dnf.sh"), HasSubstr("sysctl -p \"$f\"\n"));
  EXPECT_THAT(Slurp(dir / "os.sysctl.verify.sh"), HasSubstr("\nsysctl vm.swappiness\n"));
  const std::string input = Slurp(dir / "os.sysctl.input.peer.sh");
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
