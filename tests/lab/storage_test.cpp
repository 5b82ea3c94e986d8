// The NFS steps (playbooks/50-storage.yaml) on a lab with an Ubuntu storage
// server and Ubuntu and Rocky clients. The kernel has no NFS, so the lab
// simulates the transport (docs/lab.md, NFS); /etc/exports, exportfs,
// /etc/fstab and mount(8) are the real ones. A file written through one
// client is read through another, the mounts come back after reboots, a
// client outside an export's clients is refused, and a second apply sends
// nothing.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/step_lab.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Quote;
using test::Result;
using test::Shell;

class StorageLabTest : public test::StepLabTest {
 protected:
  void SetUp() override { UpWith("stn", {"05-os-identity.yaml", "50-storage.yaml"}); }
};

TEST_F(StorageLabTest, ClientsShareTheServersExportOnBothFamilies) {
  const Result apply = Gpuctl("apply --yes --run-dir " + RunDir("first"));
  ASSERT_EQ(apply.status, 0) << apply.out;
  const std::string server = lab_->Node("storage1").address;

  // The server: real exportfs lists the export for the lab's subnet only.
  const std::string exports = On("storage1", "exportfs -v");
  EXPECT_NE(exports.find("/data/shared"), std::string::npos) << exports;
  EXPECT_NE(exports.find(lab_->Env("LAB_SUBNET")), std::string::npos)
      << exports << " (subnet " << lab_->Env("LAB_SUBNET") << ")";
  EXPECT_EQ(On("storage1", "systemctl is-active nfs-server"), "active");

  // Each client: the fstab line, and a mount at the mount point.
  const std::string fstab_line = server + ":/data/shared /data/shared nfs rw,hard,nfsvers=4.1 0 0";
  for (const char* node : {"master1", "worker1", "worker2"}) {
    SCOPED_TRACE(node);
    EXPECT_EQ(On(node, "grep -cxF " + Quote(fstab_line) + " /etc/fstab"), "1");
    EXPECT_EQ(lab_->Ssh(node, "findmnt -n -M /data/shared").status, 0);
  }

  // Written through the Ubuntu client, read through the Rocky one, and back;
  // the server's own directory holds both.
  const std::string token = fmt::format("token-{}", getpid());
  ASSERT_EQ(lab_->Ssh("worker1", "echo " + token + "-w1 > /data/shared/from-worker1").status, 0);
  EXPECT_EQ(On("worker2", "cat /data/shared/from-worker1"), token + "-w1");
  ASSERT_EQ(lab_->Ssh("worker2", "echo " + token + "-w2 > /data/shared/from-worker2").status, 0);
  EXPECT_EQ(On("worker1", "cat /data/shared/from-worker2"), token + "-w2");
  EXPECT_EQ(On("storage1", "cat /data/shared/from-worker1 /data/shared/from-worker2"),
            token + "-w1\n" + token + "-w2");

  // After reboots of the server and a client, the mount comes back from
  // fstab and the data is still there.
  ASSERT_EQ(Shell(lab_->Tool("reboot storage1 --wait") + " >/dev/null 2>&1").status, 0);
  ASSERT_EQ(Shell(lab_->Tool("reboot worker2 --wait") + " >/dev/null 2>&1").status, 0);
  EXPECT_TRUE(test::PollUntil(std::chrono::seconds(30), [&] {
    return On("worker2", "cat /data/shared/from-worker1 2>/dev/null") == token + "-w1";
  }));

  // An export whose clients exclude the lab: the server refuses the mount.
  ASSERT_EQ(lab_->Ssh("storage1",
                      "mkdir -p /data/private && echo '/data/private 192.0.2.1/32(rw)' >> "
                      "/etc/exports && exportfs -ra && systemctl reload nfs-server")
                .status,
            0);
  const Result refused = lab_->Ssh("worker1",
                                   "mkdir -p /mnt/private && mount -t nfs storage1:/data/private "
                                   "/mnt/private 2>&1");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("access denied by server"), std::string::npos) << refused.out;
  EXPECT_NE(lab_->Ssh("worker1", "findmnt -n -M /mnt/private").status, 0);

  const Result check = Gpuctl("check");
  EXPECT_EQ(check.status, 0) << check.out;
  const Result again = Gpuctl("apply --yes --run-dir " + RunDir("second"));
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(ChangesIn(RunDir("second")), 0) << again.out;
  // The admin's own export line is kept beside gpuctl's block.
  EXPECT_EQ(On("storage1", "grep -c '^/data/private ' /etc/exports"), "1");
}

}  // namespace
}  // namespace gpuctl
