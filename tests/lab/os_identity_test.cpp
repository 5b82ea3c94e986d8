// The OS identity steps (playbooks/05-os-identity.yaml) on real nodes of both
// families: hostname, the /etc/hosts block and the default target converge
// from a node set up wrong, keep what the admin wrote outside gpuctl's
// block, and a second apply sends nothing.
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

// worker1 is Ubuntu (apt) and worker2 Rocky (dnf) in `--profile mixed`.
const std::vector<std::string> kNodesChecked = {"worker1", "worker2"};
constexpr const char* kAdminLine = "192.0.2.7 admin-added.example admin-added";

class OsIdentityLabTest : public test::LabCase {
 protected:
  std::string Prefix() const override { return "o"; }
  std::string Only() const override { return "os"; }

  // The lines between gpuctl's markers in a node's /etc/hosts.
  std::vector<std::string> Block(const std::string& node) const {
    const Result r = lab_->Ssh(node, "sed -n '/^# BEGIN gpuctl$/,/^# END gpuctl$/p' /etc/hosts");
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("# ", 0) != 0) lines.push_back(line);
    }
    return lines;
  }
};

TEST_F(OsIdentityLabTest, ApplySetsHostnameHostsBlockAndTargetOnBothFamilies) {
  // Start each checked node wrong in all three ways, with a line of the
  // admin's own in /etc/hosts that apply must keep.
  for (const std::string& node : kNodesChecked) {
    ASSERT_EQ(lab_->Ssh(node, "hostname wrong-name && echo wrong-name > /etc/hostname").status, 0)
        << node;
    ASSERT_EQ(lab_->Ssh(node, std::string("echo ") + Quote(kAdminLine) + " >> /etc/hosts").status,
              0)
        << node;
    ASSERT_EQ(lab_->Ssh(node, "systemctl set-default graphical.target").status, 0) << node;
  }

  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("first"));
  ASSERT_EQ(apply.status, 0) << apply.out;
  // At least the three identity steps on each node set up wrong.
  EXPECT_GE(ChangesIn(RunDir("first")), 6) << apply.out;

  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node + " (" + lab_->Node(node).os + ")");
    EXPECT_EQ(Trim(lab_->Ssh(node, "uname -n").out), node);
    EXPECT_EQ(Trim(lab_->Ssh(node, "cat /etc/hostname").out), node);
    EXPECT_EQ(Trim(lab_->Ssh(node, "systemctl get-default").out), "multi-user.target");

    const std::vector<std::string> block = Block(node);
    for (const test::LabNode& other : lab_->nodes()) {
      const std::string line = other.address + " " + other.name;
      EXPECT_NE(std::find(block.begin(), block.end(), line), block.end())
          << "missing from the gpuctl block: " << line;
    }
    // The admin's line is kept, outside the block, exactly once.
    EXPECT_EQ(std::find(block.begin(), block.end(), kAdminLine), block.end());
    EXPECT_EQ(
        Trim(lab_->Ssh(node, std::string("grep -cxF ") + Quote(kAdminLine) + " /etc/hosts").out),
        "1");
    EXPECT_EQ(Trim(lab_->Ssh(node, "grep -c '^# BEGIN gpuctl$' /etc/hosts").out), "1");
  }

  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("second"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("second")), 0) << again.out;

  // A full /etc (issue 14): the write fails with the OS's message, /etc/hosts
  // stays byte-identical, and once space is freed a re-run converges with the
  // admin's lines still there. Shares this case's lab (CI time).
  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node + " (" + lab_->Node(node).os + ")");
    // The original /etc/hosts was backed up once, before gpuctl first edited it.
    EXPECT_EQ(lab_->Ssh(node, "grep -q localhost /var/lib/gpuctl/backup/etc/hosts").status, 0);
    // gpuctl's block removed, so os.hosts has to write.
    ASSERT_EQ(lab_->Ssh(node, "sed -i '/^# BEGIN gpuctl$/,/^# END gpuctl$/d' /etc/hosts").status,
              0);
    // A copy of /etc on a tmpfs just big enough, bound over /etc, then
    // filled: the node's own files stay readable (sshd, PAM), nothing fits.
    const Result full = lab_->Ssh(node,
                                  "set -e; d=/run/gpuctl-full-etc; mkdir -p $d; "
                                  "mount -t tmpfs -o size=$(( $(du -sk /etc | cut -f1) + 1024 ))k "
                                  "gpuctl-full-etc $d; cp -a /etc/. $d/; mount --bind $d /etc; "
                                  "head -c 1G /dev/zero >/etc/gpuctl-fill 2>/dev/null || true; "
                                  "df -k /etc | tail -n 1");
    ASSERT_EQ(full.status, 0) << full.out;
  }
  const std::string before_cmd = "sha256sum /etc/hosts";
  std::map<std::string, std::string> before;
  for (const std::string& node : kNodesChecked) before[node] = lab_->Ssh(node, before_cmd).out;

  test::OnlySteps("os.hosts");  // GPUCTL_ONLY, what --only would set
  const Result failed = Gpuctl("apply --yes --run-dir " + RunDir("full"));
  EXPECT_NE(failed.status, 0) << failed.out;
  EXPECT_NE(failed.out.find("No space left on device"), std::string::npos) << failed.out;
  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node);
    EXPECT_EQ(lab_->Ssh(node, before_cmd).out, before[node]);
    EXPECT_EQ(Trim(lab_->Ssh(node, "ls -A /etc | grep -c '^\\.hosts\\.gpuctl-' || true").out), "0")
        << "a temp file was left in /etc";
    ASSERT_EQ(lab_->Ssh(node, "rm -f /etc/gpuctl-fill").status, 0);
  }

  const Result freed = Gpuctl("apply --yes --run-dir " + RunDir("freed"));
  test::OnlySteps(Only());
  EXPECT_EQ(freed.status, 0) << freed.out;
  for (const std::string& node : kNodesChecked) {
    SCOPED_TRACE(node);
    EXPECT_EQ(Trim(lab_->Ssh(node, "grep -c '^# BEGIN gpuctl$' /etc/hosts").out), "1");
    EXPECT_EQ(
        Trim(lab_->Ssh(node, std::string("grep -cxF ") + Quote(kAdminLine) + " /etc/hosts").out),
        "1");
    EXPECT_EQ(lab_->Ssh(node, "grep -Eq '^(127\\.0\\.0\\.1|::1)[[:space:]].*localhost' /etc/hosts")
                  .status,
              0);
    // The lab is purged after the case; unmounting keeps the node usable till then.
    (void)lab_->Ssh(node, "umount -l /etc; umount -l /run/gpuctl-full-etc");
  }

  // Packages (issue 14): a failing postinst and a file conflict on the
  // Ubuntu node, through the prelude's own pkg_install and pkg_state (no
  // catalog step installs the fault stand-ins), each converging once the
  // cause is gone.
  std::ifstream prelude_file(std::string(GPUCTL_FIXTURES_DIR) + "/../../playbooks/prelude.sh");
  std::stringstream prelude;
  prelude << prelude_file.rdbuf();
  const auto pkg = [&](const std::string& script) {
    const std::string text = prelude.str() + "\n" + script + "\n";
    return lab_->Ssh("worker1", "printf %s " + Quote(text) +
                                    " >/root/gpuctl-pkg.sh && GPUCTL_OS_FAMILY=debian sh "
                                    "/root/gpuctl-pkg.sh 2>&1");
  };
  ASSERT_EQ(lab_->Ssh("worker1", "touch /etc/gpuctl-lab-fault-postinst").status, 0);
  Result r = pkg("pkg_install gpuctl-lab-fault-postinst");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("post-installation script subprocess returned error exit status 1"),
            std::string::npos)
      << r.out;
  r = pkg("pkg_state gpuctl-lab-fault-postinst");
  EXPECT_NE(r.out.find("gpuctl-lab-fault-postinst is half-configured (iF): its postinst failed"),
            std::string::npos)
      << r.out;
  ASSERT_EQ(lab_->Ssh("worker1", "rm -f /etc/gpuctl-lab-fault-postinst").status, 0);
  r = pkg(
      "pkg_install gpuctl-lab-fault-postinst && pkg_state gpuctl-lab-fault-postinst && echo OK");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("repairing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;

  r = pkg("pkg_install gpuctl-lab-fault-owner");
  ASSERT_EQ(r.status, 0) << r.out;
  r = pkg("pkg_install gpuctl-lab-fault-conflict");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("trying to overwrite '/usr/share/gpuctl-lab/fault-shared.txt'"),
            std::string::npos)
      << r.out;
  // The cause goes (the other package removed); the next install converges.
  ASSERT_EQ(lab_->Ssh("worker1", "apt-get remove -y -q gpuctl-lab-fault-owner").status, 0);
  r =
      pkg("pkg_install gpuctl-lab-fault-conflict && pkg_state gpuctl-lab-fault-conflict && "
          "cat /usr/share/gpuctl-lab/fault-shared.txt");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("conflict\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpuctl
