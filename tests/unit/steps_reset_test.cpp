// The ledger the prelude keeps on a node (what gpuctl wrote, held, installed
// and enabled) and the reset steps that read it back (playbooks/95-reset.yaml;
// docs/day2.md, "Resetting nodes"). The ledger, the backups and the files
// live in the harness's own directory (GPUCTL_LEDGER, GPUCTL_BACKUP_DIR), so
// most of these run as any user.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;
using testing::StepRun;

const char* const kResetInventory =
    "cluster: t\norchestrator: slurm\n"
    "nodes:\n"
    "  - {name: m, address: 198.18.241.10, os: ubuntu-22.04, roles: [master]}\n"
    "  - {name: w, address: 198.18.241.11, os: rocky-9, roles: [worker]}\n";

std::string Read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A harness whose ledger and backups are under its own directory.
class Ledgered {
 public:
  Ledgered() : h(kResetInventory) {
    h.SetEnv("GPUCTL_LEDGER", Ledger().string());
    h.SetEnv("GPUCTL_BACKUP_DIR", (h.dir() / "state/backup").string());
  }
  [[nodiscard]] std::filesystem::path Ledger() const { return h.dir() / "state/ledger"; }
  [[nodiscard]] std::filesystem::path Path(const std::string& name) const {
    return h.dir() / "node" / name;
  }
  [[nodiscard]] std::filesystem::path Backup(const std::string& name) const {
    return h.dir() / "state/backup" / Path(name).relative_path();
  }
  [[nodiscard]] std::filesystem::path Kept(const std::string& name) const {
    return h.dir() / "state/reset" / Path(name).relative_path();
  }
  // Runs prelude code as a step's change on node `node`.
  StepRun Run(const std::string& script, const std::string& node = "m") {
    return h.Script(script, "reset.files", node);
  }
  // The step's probe on `node` finds something to undo, and says `what`.
  void ExpectToDo(const std::string& step, const std::string& node, const std::string& what) {
    const StepRun run = h.Probe(step, node);
    EXPECT_EQ(run.status, 1) << step;
    EXPECT_EQ(run.out, what) << step;
  }
  StepHarness h;
};

std::string Sha(const std::filesystem::path& path) {
  FILE* pipe = popen(("sha256sum " + ShellQuote(path.string())).c_str(), "r");
  char buffer[65] = {};
  const std::size_t n = fread(buffer, 1, 64, pipe);
  pclose(pipe);
  return std::string(buffer, n);
}

TEST(ResetLedger, WritesRecordWhetherGpuctlCreatedOrReplacedTheFileAndItsLastDigest) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  Ledgered l;
  Write(l.Path("etc/hosts"), "127.0.0.1 localhost\n");
  const std::string created = l.Path("etc/gpuctl.conf").string();
  const std::string hosts = l.Path("etc/hosts").string();
  auto run = l.Run("write_file " + ShellQuote(created) + " one\nwrite_file " + ShellQuote(created) +
                   " two\nset_gpuctl_block " + ShellQuote(hosts) + " '10.0.0.1 m'\n");
  ASSERT_EQ(run.status, 0) << run.out;
  const std::string ledger = Read(l.Ledger());
  // The first write of a path gives its kind; each write its digest.
  EXPECT_NE(ledger.find("file created "), std::string::npos) << ledger;
  EXPECT_NE(ledger.find("file created " + Sha(l.Path("etc/gpuctl.conf")) + " " + created + "\n"),
            std::string::npos)
      << ledger;
  EXPECT_EQ(ledger.find("file replaced " + std::string(64, 'x')), std::string::npos);
  EXPECT_NE(ledger.find("file replaced " + Sha(l.Path("etc/hosts")) + " " + hosts + "\n"),
            std::string::npos)
      << ledger;
  EXPECT_EQ(Read(l.Backup("etc/hosts")), "127.0.0.1 localhost\n");
}

TEST(ResetLedger, UnitsAndHoldsAreRecordedOnlyWhenGpuctlMadeThem) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  Ledgered l;
  // munge is enabled already (the admin's); slurmd is not.
  l.h.Stub("systemctl",
           "case \"$*\" in 'is-enabled -q munge') exit 0 ;; is-enabled*) exit 1 ;; esac\nexit 0");
  l.h.Stub("apt-mark", "exit 0");
  auto run = l.Run("svc_enable munge\nsvc_enable --now slurmd\npkg_hold libnccl2\n");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(Read(l.Ledger()), "unit slurmd\nhold libnccl2\n");
  // Recorded once, however often it happens.
  run = l.Run("svc_enable slurmd\npkg_hold libnccl2\n");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(Read(l.Ledger()), "unit slurmd\nhold libnccl2\n");
}

TEST(ResetLedger, PackagesAreRecordedByNameOnlyWhenTheInstallBroughtThem) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  Ledgered l;
  const std::string marker = (l.h.dir() / "installed").string();
  // rpm: chrony was there before; slurm is there once dnf has run.
  l.h.Stub("rpm",
           "for a; do last=$a; done\ncase \"$last\" in\n  chrony) ;;\n"
           "  slurm*) [ -e " +
               ShellQuote(marker) +
               " ] || exit 1 ;;\n  *) exit 1 ;;\nesac\n"
               "case \"$*\" in *--qf*) echo \"${last%%-2*}\" ;; esac\nexit 0");
  l.h.Stub("dnf", "touch " + ShellQuote(marker));
  auto run = l.Run("pkg_install chrony slurm-23.11.4\n", "w");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(Read(l.Ledger()), "package slurm\n");
}

TEST(ResetLedger, WhatAnInstallTookAwayIsRecordedUnlessItWasGpuctlsOwn) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  Ledgered l;
  Write(l.Ledger(), "package nvidia-driver-550\n");
  const std::string marker = ShellQuote((l.h.dir() / "installed").string());
  // dpkg before and after an install of chrony (which takes the admin's
  // systemd-timesyncd away) and of the 570 driver (replacing gpuctl's 550).
  l.h.Stub("dpkg-query",
           "for a; do last=$a; done\ncase \"$*\" in\n  *Status-Abbrev*)\n    if [ -e " + marker +
               " ]; then printf 'ii chrony\\nii nvidia-driver-570\\n'; else "
               "printf 'ii systemd-timesyncd\\nii nvidia-driver-550\\n'; fi ;;\n"
               "  *'${Status}'*)\n    [ -e " +
               marker +
               " ] || exit 1\n    case \"$last\" in chrony | nvidia-driver-570) echo "
               "'install ok installed' ;; *) exit 1 ;; esac ;;\n"
               "  *) echo \"$last\" ;;\nesac");
  l.h.Stub("apt-get", "touch " + marker);
  auto run = l.Run("pkg_install chrony nvidia-driver-570\n");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(Read(l.Ledger()),
            "package nvidia-driver-550\npackage chrony\npackage nvidia-driver-570\n"
            "removed systemd-timesyncd\n");
}

TEST(ResetSteps, FilesArePutBackAsTheLedgerSaysAndWhatTheAdminChangedIsKept) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  Ledgered l;
  // What gpuctl did: created two files, replaced two the admin had.
  l.h.Stub("systemctl", "exit 0");
  const auto q = [&](const std::string& name) { return ShellQuote(l.Path(name).string()); };
  Write(l.Path("etc/hosts"), "127.0.0.1 localhost\n");
  Write(l.Path("etc/chrony.conf"), "pool ntp.example\n");
  auto run =
      l.Run("write_file " + q("etc/modprobe.d/x.conf") + " created\n" + "write_file " +
            q("etc/slurm/cgroup.conf") + " created\n" + "set_gpuctl_block " + q("etc/hosts") +
            " '10.0.0.1 m'\n" + "write_file " + q("etc/chrony.conf") + " 'server m iburst'\n");
  ASSERT_EQ(run.status, 0) << run.out;
  // What the admin did since: edited one created file, added a hosts line.
  Write(l.Path("etc/slurm/cgroup.conf"), "the admin's\n");
  Write(l.Path("etc/hosts"), Read(l.Path("etc/hosts")) + "10.9.9.9 mine\n");

  run = l.h.Probe("reset.files", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "to put back:\nremove " + l.Path("etc/modprobe.d/x.conf").string() +
                         "\nunblock " + l.Path("etc/hosts").string() + "\nrestore " +
                         l.Path("etc/chrony.conf").string() + "\n");

  run = l.h.Change("reset.files", "m");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_FALSE(std::filesystem::exists(l.Path("etc/modprobe.d/x.conf")));
  EXPECT_EQ(Read(l.Path("etc/slurm/cgroup.conf")), "the admin's\n");
  EXPECT_EQ(Read(l.Path("etc/hosts")), "127.0.0.1 localhost\n10.9.9.9 mine\n");
  EXPECT_EQ(Read(l.Path("etc/chrony.conf")), "pool ntp.example\n");
  // Each file as gpuctl left it is kept.
  EXPECT_EQ(Read(l.Kept("etc/modprobe.d/x.conf")), "created\n");
  EXPECT_EQ(Read(l.Kept("etc/chrony.conf")), "server m iburst\n");
  EXPECT_NE(Read(l.Kept("etc/hosts")).find("# BEGIN gpuctl\n10.0.0.1 m\n"), std::string::npos);

  // A second reset has nothing to do.
  run = l.h.Probe("reset.files", "m");
  EXPECT_EQ(run.status, 0) << run.out;
  // And an apply after it starts the ledger's story again.
  run = l.Run("set_gpuctl_block " + q("etc/hosts") + " '10.0.0.2 m'\n");
  ASSERT_EQ(run.status, 0) << run.out;
  run = l.h.Probe("reset.files", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "to put back:\nrestore " + l.Path("etc/hosts").string() + "\n");
}

TEST(ResetSteps, UnitsGpuctlEnabledAreDisabledOthersLeftAlone) {
  Ledgered l;
  Write(l.Ledger(), "unit slurmd\nunit munge\n");
  // slurmd enabled, munge already off; chronyd (not gpuctl's) on.
  l.h.Stub("systemctl",
           "case \"$*\" in\n  *slurmd*) [ \"$1\" = is-enabled ] && exit 0; exit 3 ;;\n"
           "  *chronyd*) exit 0 ;;\nesac\nexit 3");
  l.ExpectToDo("reset.units", "m", "enabled by gpuctl: slurmd\n");
}

TEST(ResetSteps, HoldsOnlyGpuctlsAreLifted) {
  Ledgered l;
  Write(l.Ledger(), "hold nvidia-driver-550\nhold linux-image-generic\n");
  l.h.StubOutput("apt-mark", "nvidia-driver-550\nzfs-dkms\n");
  l.ExpectToDo("reset.holds", "m", "held by gpuctl: nvidia-driver-550\n");
}

TEST(ResetSteps, DnfExcludesLoseGpuctlsEntriesAndKeepTheAdmins) {
  if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  Ledgered l;
  Write(l.Ledger(), "hold cuda-drivers-550\nhold kernel-core\n");
  l.h.File("/etc/dnf/dnf.conf",
           "[main]\ngpgcheck=1\nexcludepkgs=cuda-drivers-550 kernel-core zfs*\n[other]\nx=1\n");
  l.ExpectToDo("reset.holds", "w", "held by gpuctl: cuda-drivers-550 kernel-core\n");
  // What it would write (gpuctl_put's own checks have tests of their own).
  const StepRun run = l.h.Script("gpuctl_put() { shift 2; \"$@\"; }\n" +
                                     l.h.catalog().Find("reset.holds")->change.at(OsFamily::kRhel),
                                 "reset.holds", "w");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "[main]\nexcludepkgs=zfs*\ngpgcheck=1\n[other]\nx=1\n");
}

TEST(ResetSteps, PackagesOnlyWithResetPackagesAndOnlyThoseStillInstalled) {
  Ledgered l;
  Write(l.Ledger(), "package slurm\npackage munge\n");
  l.h.Stub("rpm", "for a; do last=$a; done\n[ \"$last\" = slurm ]");
  l.ExpectToDo("reset.packages", "w", "installed by gpuctl: slurm\n");
  const Step* step = l.h.catalog().Find("reset.packages");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->when, std::vector<StepCondition>{StepCondition::kResetPackages});
  EXPECT_TRUE(step->reset);
}

}  // namespace
}  // namespace gpuctl
