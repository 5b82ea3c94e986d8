// The NFS steps (playbooks/50-storage.yaml) read exportfs and findmnt as the
// real tools answer: Debian's exportfs -v captured on the lab's storage node
// (tests/fixtures/exportfs/, both of its layouts: client on the path's line,
// or on the next lines for a long path) and findmnt from a lab client.
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

// `exports` and `mounts` are the inventory's nfs lists (flow YAML).
std::string StorageInventory(const std::string& exports, const std::string& mounts) {
  return "cluster: t\nnetwork: {subnet: 198.18.241.0/24}\n"
         "nfs: {server: s, exports: " +
         exports + ", mounts: " + mounts +
         "}\nnodes:\n"
         "  - {name: m, address: 198.18.241.10, os: ubuntu-22.04, roles: [master]}\n"
         "  - {name: w, address: 198.18.241.12, os: rocky-9, roles: [worker]}\n"
         "  - {name: s, address: 198.18.241.13, os: ubuntu-22.04, roles: [storage]}\n";
}

bool StorageHas(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(StorageSteps, ServerVerifyFindsAShortExportOnItsOwnLine) {
  StepHarness h(StorageInventory("[{path: /data/shared}]", "[]"));
  h.StubOutput("systemctl", "active\n");
  h.StubFixture("exportfs", "exportfs/v-short-path.txt");
  const auto run = h.Verify("nfs.server", "s");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(StorageSteps, ServerVerifyFindsEachClientOfALongPath) {
  // Two clients, each on its own line under the path.
  StepHarness h(
      StorageInventory("[{path: /srv/datasets-for-training, clients: 198.18.241.12}]", "[]"));
  h.StubOutput("systemctl", "active\n");
  h.StubFixture("exportfs", "exportfs/v-long-path.txt");
  EXPECT_EQ(h.Verify("nfs.server", "s").status, 0);

  StepHarness wider(
      StorageInventory("[{path: /srv/datasets-for-training, clients: 198.18.241.0/24}]", "[]"));
  wider.StubOutput("systemctl", "active\n");
  wider.StubFixture("exportfs", "exportfs/v-long-path.txt");
  const auto run = wider.Verify("nfs.server", "s");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(StorageHas(run.out, "not exported now: /srv/datasets-for-training(198.18.241.0/24)"))
      << run.out;
}

TEST(StorageSteps, ServerVerifyNamesAnExportTheServerDoesNotServe) {
  StepHarness h(StorageInventory("[{path: /data/shared}, {path: /data/models}]", "[]"));
  h.StubOutput("systemctl", "active\n");
  h.StubFixture("exportfs", "exportfs/v-short-path.txt");
  const auto run = h.Verify("nfs.server", "s");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(StorageHas(run.out, "not exported now: /data/models(198.18.241.0/24)")) << run.out;
}

TEST(StorageSteps, ServerVerifyNeedsTheServiceRunning) {
  StepHarness h(StorageInventory("[{path: /data/shared}]", "[]"));
  h.StubOutput("systemctl", "inactive\n", 3);
  h.StubFixture("exportfs", "exportfs/v-short-path.txt");
  const auto run = h.Verify("nfs.server", "s");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(StorageHas(run.out, "nfs-server is inactive (want active)")) << run.out;
}

TEST(StorageSteps, ClientVerifyNamesAMountPointNotMounted) {
  StepHarness h(
      StorageInventory("[{path: /data/shared}]", "[{export: /data/shared, path: /data/shared}]"));
  h.StubOutput("findmnt", "", 1);  // findmnt -n -M: nothing, status 1
  const auto run = h.Verify("nfs.client", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(StorageHas(run.out, "NFS mounts: /data/shared (not mounted)")) << run.out;
}

TEST(StorageSteps, ClientVerifyWritesThroughTheMount) {
  // Mounted (a lab client's findmnt line), but the mount point takes no file.
  StepHarness h(
      StorageInventory("[{path: /data/shared}]", "[{export: /data/shared, path: /proc/nfs}]"));
  h.StubFixture("findmnt", "findmnt/lab-nfs-bind.txt");
  auto run = h.Verify("nfs.client", "w");
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(StorageHas(run.out, "NFS mounts: /proc/nfs (not writable)")) << run.out;

  // A read-only mount is only checked mounted; then /etc/fstab is read
  // (this host's has no gpuctl block).
  StepHarness ro(StorageInventory(
      "[{path: /data/shared}]", "[{export: /data/shared, path: /proc/nfs, options: \"ro,hard\"}]"));
  ro.StubFixture("findmnt", "findmnt/lab-nfs-bind.txt");
  run = ro.Verify("nfs.client", "w");
  EXPECT_FALSE(StorageHas(run.out, "not writable")) << run.out;
}

}  // namespace
}  // namespace gpuctl
