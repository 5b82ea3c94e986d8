// The prelude's write helpers (write_file, set_gpuctl_block, edit_file,
// gpuctl_put; docs/playbooks.md#writes) on real files: the owner and mode
// kept, the original backed up once, and a failed write (a full tmpfs, a
// read-only bind, both mounted in the harness's private mount namespace)
// failing the script with the OS's message while the target stays
// byte-identical. Root only (the namespace, chown).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::Slurp;
using testing::StepHarness;

constexpr const char* kWritesInventory = R"(cluster: t
nodes:
  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
)";

class PreludeWritesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
    etc_ = h_.dir() / "etc";
    std::filesystem::create_directories(etc_);
    h_.SetEnv("GPUCTL_BACKUP_DIR", (h_.dir() / "backup").string());
  }
  // The backup of `path` (an absolute path) under GPUCTL_BACKUP_DIR.
  std::filesystem::path Backup(const std::filesystem::path& path) const {
    return h_.dir() / "backup" / path.relative_path();
  }
  testing::StepRun Run(const std::string& script) {
    return h_.Script("D=" + ShellQuote(etc_.string()) + "\n" + script, "os.hosts", "master1");
  }
  StepHarness h_{kWritesInventory};
  std::filesystem::path etc_;
};

TEST_F(PreludeWritesTest, ABlockLongerThanTheEnvironmentHoldsIsWritten) {
  // 10,000 nodes' hosts lines: over the 128 KiB Linux allows one
  // environment string, so the block must not travel through the
  // environment to awk.
  const auto hosts = etc_ / "hosts";
  std::ofstream(hosts) << "127.0.0.1 localhost\n";
  auto run =
      Run("lines=$(awk 'BEGIN { for (i = 1; i <= 10000; i++) printf \"10.0.%d.%d node%05d\\n\", "
          "i / 256, i % 256, i }')\nset_gpuctl_block \"$D/hosts\" \"$lines\"\necho done");
  ASSERT_EQ(run.status, 0) << run.out;
  const std::string text = Slurp(hosts);
  EXPECT_EQ(text.rfind("127.0.0.1 localhost\n# BEGIN gpuctl\n10.0.0.1 node00001\n", 0), 0U);
  EXPECT_NE(text.find("\n10.0.39.16 node10000\n# END gpuctl\n"), std::string::npos);
  EXPECT_GT(text.size(), 200000U);
}

TEST_F(PreludeWritesTest, KeepsOwnerAndModeAndBacksUpTheOriginalOnce) {
  const auto hosts = etc_ / "hosts";
  std::ofstream(hosts) << "127.0.0.1 localhost\n::1 localhost\n";
  ASSERT_EQ(chmod(hosts.c_str(), 0640), 0);
  ASSERT_EQ(chown(hosts.c_str(), 65534, 65534), 0);
  auto run = Run("set_gpuctl_block \"$D/hosts\" '198.18.0.10 master1'\necho done");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(
      Slurp(hosts),
      "127.0.0.1 localhost\n::1 localhost\n# BEGIN gpuctl\n198.18.0.10 master1\n# END gpuctl\n");
  struct stat st {};
  ASSERT_EQ(stat(hosts.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_gid, 65534u);
  // The backup is the admin's file as it was, with its owner and mode.
  EXPECT_EQ(Slurp(Backup(hosts)), "127.0.0.1 localhost\n::1 localhost\n");
  ASSERT_EQ(stat(Backup(hosts).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_uid, 65534u);

  // A second edit replaces the file, never the backup.
  run = Run("set_gpuctl_block \"$D/hosts\" '198.18.0.11 worker1'");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(Slurp(hosts).find("198.18.0.11 worker1"), std::string::npos);
  EXPECT_EQ(Slurp(Backup(hosts)), "127.0.0.1 localhost\n::1 localhost\n");
  // No temp file is left beside the target.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(etc_)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(PreludeWritesTest, AnExplicitModeWinsAndANewFileGetsOneAndNoBackup) {
  const auto key = etc_ / "authorized_keys";
  std::ofstream(key) << "ssh-rsa AAAA admin\n";
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  auto run =
      Run("write_file \"$D/authorized_keys\" 'ssh-ed25519 BBBB master' 0600\n"
          "write_file \"$D/new.conf\" 'x = 1'");
  ASSERT_EQ(run.status, 0) << run.out;
  struct stat st {};
  ASSERT_EQ(stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(stat((etc_ / "new.conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(Slurp(etc_ / "new.conf"), "x = 1\n");
  EXPECT_FALSE(std::filesystem::exists(Backup(etc_ / "new.conf")));
}

TEST_F(PreludeWritesTest, EditFileIsASedThatKeepsTheFile) {
  const auto fstab = etc_ / "fstab";
  std::ofstream(fstab) << "UUID=a / ext4 defaults 0 1\n/swap.img none swap sw 0 0\n";
  const auto run = Run(
      "edit_file \"$D/fstab\" sed -E 's@^([^#]\\S*\\s+\\S+\\s+swap\\s.*)$@# disabled by gpuctl: "
      "\\1@'");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(Slurp(fstab),
            "UUID=a / ext4 defaults 0 1\n# disabled by gpuctl: /swap.img none swap sw 0 0\n");
  EXPECT_EQ(Slurp(Backup(fstab)), "UUID=a / ext4 defaults 0 1\n/swap.img none swap sw 0 0\n");
}

TEST_F(PreludeWritesTest, AFullFileSystemFailsWithTheOsMessageAndKeepsTheTarget) {
  // A tiny tmpfs over the directory, the target copied in, then filled up.
  const std::string original = "127.0.0.1 localhost\n::1 localhost ip6-localhost\n";
  std::ofstream(h_.dir() / "hosts.orig") << original;
  const auto run = Run("O=" + ShellQuote((h_.dir() / "hosts.orig").string()) +
                       R"sh(
mount -t tmpfs -o size=16k tmpfs "$D" || exit 99
cp "$O" "$D/hosts"
# The backup already exists (made on an earlier run): only the write fails.
mkdir -p "$GPUCTL_BACKUP_DIR$D" && cp "$O" "$GPUCTL_BACKUP_DIR$D/hosts"
head -c 1M /dev/zero >"$D/fill" 2>/dev/null
set_gpuctl_block "$D/hosts" "$(printf '198.18.0.%s node%s\n' 1 1 2 2 3 3 4 4)"
echo "went on after a failed write"
)sh");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("No space left on device"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("gpuctl: cannot write"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("went on"), std::string::npos) << run.out;
}

TEST_F(PreludeWritesTest, AFullFileSystemLeavesTheTargetByteIdentical) {
  // As above, but the check runs after the failed helper, in a subshell the
  // helper's exit cannot end.
  const std::string original = "127.0.0.1 localhost\n::1 localhost ip6-localhost\n";
  std::ofstream(h_.dir() / "hosts.orig") << original;
  const auto run = Run("O=" + ShellQuote((h_.dir() / "hosts.orig").string()) + R"sh(
mount -t tmpfs -o size=16k tmpfs "$D" || exit 99
cp "$O" "$D/hosts"
mkdir -p "$GPUCTL_BACKUP_DIR$D" && cp "$O" "$GPUCTL_BACKUP_DIR$D/hosts"
head -c 1M /dev/zero >"$D/fill" 2>/dev/null
(write_file "$D/hosts" "$(cat "$O")
198.18.0.1 node1")
echo "status=$?"
cmp "$D/hosts" "$O" && echo SAME
ls -A "$D"
)sh");
  EXPECT_NE(run.out.find("status=1"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("No space left on device"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("SAME"), std::string::npos) << run.out;
  // Only the target and the filler: the temp file is gone.
  EXPECT_TRUE(run.out.ends_with("SAME\nfill\nhosts\n")) << run.out;
}

TEST_F(PreludeWritesTest, AFailedBackupFailsBeforeTheTargetIsTouched) {
  const std::string original = "admin line\n";
  std::ofstream(etc_ / "exports") << original;
  // The backup directory is a read-only bind: the backup cannot be made.
  std::filesystem::create_directories(h_.dir() / "backup");
  const auto run = Run(R"sh(
mount --bind "$GPUCTL_BACKUP_DIR" "$GPUCTL_BACKUP_DIR" && mount -o remount,bind,ro "$GPUCTL_BACKUP_DIR" || exit 99
(set_gpuctl_block "$D/exports" "/srv 10.0.0.0/8(rw)")
echo "status=$?"
cat "$D/exports"
ls -A "$D"
)sh");
  EXPECT_NE(run.out.find("status=1"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Read-only file system"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("gpuctl: cannot back up"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("admin line\nexports\n"), std::string::npos) << run.out;
}

TEST_F(PreludeWritesTest, AReadOnlyTargetDirectoryFailsWithTheOsMessage) {
  std::ofstream(etc_ / "hosts") << "127.0.0.1 localhost\n";
  const auto run = Run(R"sh(
mount --bind "$D" "$D" && mount -o remount,bind,ro "$D" || exit 99
(write_file "$D/hosts" "x")
echo "status=$?"
cat "$D/hosts"
)sh");
  EXPECT_NE(run.out.find("status=1"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Read-only file system"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("127.0.0.1 localhost\n"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace gpuctl
