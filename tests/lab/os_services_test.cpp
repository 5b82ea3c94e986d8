// The OS service steps (playbooks/15-os-services.yaml) on Ubuntu (apt) and
// Rocky (dnf) nodes: chrony with the master serving the others, the
// firewalls the admin has (real ufw on worker1, the firewalld stand-in on
// worker2) trusting the cluster and opening SSH and NodePorts, root SSH from the master to every
// node by name, then the policy turning firewalls and SELinux off; a second apply sends nothing
// each time.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>

#include "support/step_lab.h"

namespace gpuctl {
namespace {

using test::Quote;
using test::ReadFile;
using test::Result;
using test::Shell;

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

class OsServicesLabTest : public test::StepLabTest {
 protected:
  void SetUp() override { UpWith("sto", {"05-os-identity.yaml", "15-os-services.yaml"}); }
};

TEST_F(OsServicesLabTest, TimeFirewallSshAndPolicyConvergeOnBothFamilies) {
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
}

}  // namespace
}  // namespace gpuctl
