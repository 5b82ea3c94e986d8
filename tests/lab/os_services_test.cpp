// The OS identity and service steps (playbooks/05-os-identity.yaml,
// 15-os-services.yaml) on Ubuntu (apt) and Rocky (dnf) nodes, on one lab:
// hostname, the /etc/hosts block and the default target converging from
// nodes set up wrong, keeping the admin's own lines; chrony with the master serving the others, the
// firewalls the admin has (real ufw on worker1, the firewalld stand-in on
// worker2) trusting the cluster and opening SSH and NodePorts, root SSH from the master to every
// node by name, then the policy turning firewalls and SELinux off; a second apply sends nothing
// each time. Then what a node's trouble does to a write and an install: a
// full /etc, a failing postinst, a file conflict (docs/reliability.md).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "support/step_lab.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Quote;
using test::ReadFile;
using test::Result;
using test::Shell;
using test::Trim;

// Whether one of `sources` (addresses and CIDR blocks, whitespace between)
// holds the IPv4 `address`: gpuctl folds consecutive node addresses into
// blocks, so a node is trusted through its block.
bool Covered(const std::string& address, const std::string& sources) {
  auto number = [](const std::string& text, std::uint32_t& out) {
    in_addr a{};
    if (inet_pton(AF_INET, text.c_str(), &a) != 1) return false;
    out = ntohl(a.s_addr);
    return true;
  };
  std::uint32_t want = 0;
  if (!number(address, want)) return false;
  std::istringstream words(sources);
  for (std::string word; words >> word;) {
    const auto slash = word.find('/');
    const int prefix = slash == std::string::npos ? 32 : std::stoi(word.substr(slash + 1));
    std::uint32_t base = 0;
    if (!number(word.substr(0, slash), base)) continue;
    const std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
    if ((want & mask) == (base & mask)) return true;
  }
  return false;
}

constexpr const char* kAdminKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGFkbWluLWtleS1rZXB0LWJ5LWdwdWN0bA admin@example";

// worker1 is Ubuntu (apt) and worker2 Rocky (dnf) in `--profile mixed`.
const std::vector<std::string> kNodesChecked = {"worker1", "worker2"};
constexpr const char* kAdminLine = "192.0.2.7 admin-added.example admin-added";

class OsLabTest : public test::StepLabTest {
 protected:
  void SetUp() override { UpWith("sto", {"05-os-identity.yaml", "15-os-services.yaml"}); }

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

TEST_F(OsLabTest, IdentityTimeFirewallSshAndPolicyConvergeOnBothFamilies) {
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

  // The admin's firewalls (gpuctl installs none): ufw letting ssh in on
  // worker1, firewalld on worker2. An admin key on worker2, and Rocky's
  // SELinux config (the lab's kernel has no SELinux) on worker2.
  ASSERT_EQ(lab_->Ssh("worker1",
                      "DEBIAN_FRONTEND=noninteractive apt-get install -y -q ufw "
                      ">/dev/null && ufw allow 22/tcp && ufw --force enable")
                .status,
            0);
  ASSERT_EQ(lab_->Ssh("worker2", "dnf -y -q install firewalld && systemctl enable --now firewalld")
                .status,
            0);
  ASSERT_EQ(lab_->Ssh("worker2", std::string("echo ") + Quote(kAdminKey) +
                                     " >> /root/.ssh/authorized_keys && mkdir -p /etc/selinux && "
                                     "printf 'SELINUX=enforcing\\nSELINUXTYPE=targeted\\n' > "
                                     "/etc/selinux/config")
                .status,
            0);
  Converge("first");
  // At least the three identity steps on each node set up wrong.
  EXPECT_GE(ChangesIn(RunDir("first")), 6);
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

  const std::string inventory = lab_->Env("LAB_INVENTORY");
  const std::string master = lab_->Node("master1").address;

  // Time: the master serves the subnet; both workers select it.
  EXPECT_NE(On("master1", "cat /etc/chrony/chrony.conf").find("allow " + lab_->Env("LAB_SUBNET")),
            std::string::npos);
  for (const char* node : {"worker1", "worker2"}) {
    SCOPED_TRACE(node);
    EXPECT_TRUE(test::PollUntil(std::chrono::seconds(60), [&] {
      return On(node, "chronyc -c -n sources").rfind("^,*," + master + ",", 0) == 0;
    })) << On(node, "chronyc -n sources");
    // No CAP_SYS_TIME in a lab node: chronyd runs with -x.
    EXPECT_NE(On(node, "pgrep -a chronyd").find(" -x"), std::string::npos);
  }

  // Firewalls: on worker1 (real ufw, which filters) SSH and NodePorts are
  // open to anyone, and every inventory node is trusted on every port: a
  // port picked at run time (as NCCL, MPI and srun do) answers the master,
  // and not this host, which is outside the inventory.
  const std::string ufw = On("worker1", "ufw status");
  EXPECT_NE(ufw.find("Status: active"), std::string::npos) << ufw;
  for (const char* port : {"22/tcp ", "30000:32767/tcp "}) {
    EXPECT_NE(ufw.find(port), std::string::npos) << port << "\n" << ufw;
  }
  EXPECT_EQ(ufw.find("10250/tcp"), std::string::npos) << ufw;
  const std::string ufw_trusted =
      "\n" +
      On("worker1", "ufw status | awk '$1 == \"Anywhere\" && $2 == \"ALLOW\" { print $3 }'") + "\n";
  for (const char* node : {"master1", "worker1", "worker2", "storage1"}) {
    EXPECT_TRUE(Covered(lab_->Node(node).address, ufw_trusted)) << node << "\n" << ufw;
  }
  ASSERT_EQ(lab_->Ssh("worker1",
                      "systemd-run -q --unit=gpuctl-test-listener python3 -c '"
                      "import socket\ns = socket.create_server((\"\", 45678))\n"
                      "while True: s.accept()[0].close()'")
                .status,
            0);
  const std::string worker1 = lab_->Node("worker1").address;
  const std::string connect = "timeout 5 bash -c 'exec 3<>/dev/tcp/" + worker1 + "/45678'";
  EXPECT_TRUE(test::PollUntil(std::chrono::seconds(30), [&] {
    return lab_->Ssh("master1", connect).status == 0;
  })) << "the master cannot reach a trusted port on worker1";
  EXPECT_NE(Shell(connect).status, 0) << "this host, outside the inventory, got through";
  // firewalld (worker2): the same, now and after a reload.
  const std::string ports = On("worker2", "firewall-cmd --list-ports");
  EXPECT_EQ(ports, "22/tcp 30000-32767/tcp");
  EXPECT_EQ(On("worker2", "firewall-cmd --permanent --list-ports"), ports);
  const std::string trusted = On("worker2", "firewall-cmd --zone=trusted --list-sources");
  EXPECT_TRUE(Covered(lab_->Node("storage1").address, trusted)) << trusted;
  EXPECT_NE(trusted.find("10.244.0.0/16"), std::string::npos) << trusted;
  EXPECT_EQ(On("worker2", "firewall-cmd --permanent --zone=trusted --list-sources"), trusted);
  EXPECT_NE(lab_->Ssh("master1", "command -v ufw").status, 0);

  // SSH: the master reaches every node by name, without prompts; the
  // admin's key stays.
  for (const char* node : {"master1", "worker1", "worker2", "storage1"}) {
    EXPECT_EQ(On("master1", std::string("ssh -o BatchMode=yes ") + node + " hostname"), node);
  }
  EXPECT_EQ(
      On("worker2", std::string("grep -cxF ") + Quote(kAdminKey) + " /root/.ssh/authorized_keys"),
      "1");
  // disable_selinux is false: the config is left as it was.
  EXPECT_EQ(On("worker2", "sed -n 's/^SELINUX=//p' /etc/selinux/config"), "enforcing");

  // The policy: firewalls off, SELinux permissive. And the master follows a
  // site time server (this host's bridge address: none answers there, which
  // chronyd lists as an unreached source) instead of pool.ntp.org.
  const std::string subnet = lab_->Env("LAB_SUBNET");
  const std::string site_ntp = subnet.substr(0, subnet.rfind(".0/")) + ".1";
  const std::string off = (runs_ / "policy-off.yaml").string();
  ASSERT_EQ(
      Shell("sed 's/^network:$/network:\\n  ntp_servers: [" + site_ntp + "]/' " + Quote(inventory) +
            " > " + Quote(off) +
            " && printf 'policy:\\n  disable_firewall: true\\n  disable_selinux: true\\n' >> " +
            Quote(off))
          .status,
      0);
  ASSERT_NE(ReadFile(off).find("ntp_servers: [" + site_ntp + "]"), std::string::npos);
  Converge("policy", off);
  EXPECT_NE(On("master1", "cat /etc/chrony/chrony.conf").find("server " + site_ntp + " iburst"),
            std::string::npos);
  EXPECT_EQ(On("master1", "grep -c pool.ntp.org /etc/chrony/chrony.conf"), "0");
  EXPECT_NE(On("master1", "chronyc -c -n sources").find("," + site_ntp + ","), std::string::npos)
      << On("master1", "chronyc -n sources");
  EXPECT_EQ(On("worker1", "ufw status"), "Status: inactive");
  EXPECT_NE(On("worker1", "systemctl is-enabled ufw"), "enabled");
  EXPECT_EQ(On("worker2", "systemctl is-active firewalld"), "inactive");
  EXPECT_EQ(On("worker2", "sed -n 's/^SELINUX=//p' /etc/selinux/config"), "permissive");
  EXPECT_EQ(On("worker2", "sed -n 's/^SELINUXTYPE=//p' /etc/selinux/config"), "targeted");

  // A full /etc (issue 14): the write fails with the OS's message, /etc/hosts
  // stays byte-identical, and once space is freed a re-run converges with the
  // admin's lines still there.
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
  test::OnlySteps("");
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
