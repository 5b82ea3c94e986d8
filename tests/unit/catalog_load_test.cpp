// Catalog loading from a directory, which nodes a step applies to, the
// digest a saved plan records, and where the catalog is found by default.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string StepText(const std::string& id, const std::string& extra = "") {
  return "  - id: " + id + "\n    roles: [worker]\n    probe: test -e /x\n" +
         "    change: {any: touch /x}\n" + extra;
}

class CatalogDir : public ::testing::Test {
 protected:
  void SetUp() override {
    // The pid keeps concurrent runs (other worktrees, ctest -j) apart.
    dir_ = fs::temp_directory_path() /
           fmt::format("gpuctl-catalog-{}-{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(CatalogDir, LoadsFilesSortedByName) {
  Write("20-gpu.yaml", "steps:\n" + StepText("gpu.driver", "    depends: [os.base]\n"));
  Write("10-os.yaml", "steps:\n" + StepText("os.base"));
  Write("README.md", "not a playbook");
  Diagnostics diagnostics;
  auto catalog = Catalog::Load(dir_.string(), diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  ASSERT_EQ(catalog->steps().size(), 2U);
  EXPECT_EQ(catalog->steps()[0].id, "os.base");
  EXPECT_EQ(catalog->steps()[0].file, (dir_ / "10-os.yaml").string());
  EXPECT_EQ(catalog->steps()[1].id, "gpu.driver");
}

TEST_F(CatalogDir, ReadsThePreludeAndItCountsInTheDigest) {
  Write("10-os.yaml", "steps:\n" + StepText("os.base"));
  Diagnostics diagnostics;
  auto without = Catalog::Load(dir_.string(), diagnostics);
  ASSERT_TRUE(without) << diagnostics.Format();
  EXPECT_EQ(without->prelude(), "");
  Write("prelude.sh", "file_is() { :; }\n");
  auto with = Catalog::Load(dir_.string(), diagnostics);
  ASSERT_TRUE(with) << diagnostics.Format();
  EXPECT_EQ(with->prelude(), "file_is() { :; }\n");
  EXPECT_NE(with->Digest(), without->Digest());
}

TEST(CatalogShipped, PlaybooksLoadCleanly) {
  Diagnostics diagnostics;
  auto catalog = Catalog::Load(std::string(GPUCTL_SOURCE_DIR) + "/playbooks", diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  EXPECT_TRUE(diagnostics.All().empty()) << diagnostics.Format();
  EXPECT_FALSE(catalog->steps().empty());
  EXPECT_FALSE(catalog->prelude().empty());
}

TEST_F(CatalogDir, CollectsDiagnosticsAcrossFiles) {
  Write("a.yaml", "steps:\n" + StepText("x") + "  - id: y\n");
  Write("b.yaml", "steps:\n" + StepText("x", "    depends: [nope]\n"));
  Write("c.yaml", "steps: [\n");
  Write("old.yml", "steps: []\n");
  Diagnostics diagnostics;
  EXPECT_FALSE(Catalog::Load(dir_.string(), diagnostics));
  const std::string a = (dir_ / "a.yaml").string();
  const std::string b = (dir_ / "b.yaml").string();
  const std::string text = diagnostics.Format();
  EXPECT_THAT(text, HasSubstr(a + ":6:5: error: missing required key 'roles'"));
  EXPECT_THAT(text,
              HasSubstr(b + ":2:5: error: duplicate step id 'x' (first defined at " + a + ":2:5)"));
  EXPECT_THAT(text, HasSubstr(b + ":6:15: error: unknown step 'nope' in depends"));
  EXPECT_THAT(text, HasSubstr((dir_ / "c.yaml").string() + ":2:1: error: invalid YAML"));
  EXPECT_THAT(text, HasSubstr("old.yml: warning: ignored"));
}

TEST_F(CatalogDir, EmptyOrMissingDirectoryIsAnError) {
  Diagnostics empty;
  EXPECT_FALSE(Catalog::Load(dir_.string(), empty));
  EXPECT_THAT(empty.Format(), HasSubstr("no playbooks (*.yaml)"));
  Diagnostics missing;
  EXPECT_FALSE(Catalog::Load((dir_ / "absent").string(), missing));
  EXPECT_THAT(missing.Format(), HasSubstr("playbook directory not found"));
}

Inventory Cluster(const std::string& extra) {
  Diagnostics diagnostics;
  auto inv = ParseInventory(extra + R"(cluster: lab
nodes:
  - {name: m1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - name: gpu
    address: 198.18.0.11
    os: rocky-9
    roles: [worker]
    hardware:
      gpus: {model: NVIDIA H100 80GB HBM3, count: 8}
      ib: [{device: mlx5_0}]
  - {name: cpu, address: 198.18.0.12, os: ubuntu-22.04, roles: [worker]}
  - {name: s1, address: 198.18.0.13, os: ubuntu-22.04, roles: [storage]}
)",
                            "/lab/inv.yaml", diagnostics);
  EXPECT_TRUE(inv) << diagnostics.Format();
  return inv.value_or(Inventory{});
}

// Names of the nodes `step` applies to.
std::vector<std::string> Targets(const Step& step, const Inventory& inv) {
  std::vector<std::string> out;
  for (const auto& n : inv.nodes) {
    if (step.AppliesTo(n, inv)) {
      out.push_back(n.name);
    }
  }
  return out;
}

using Names = std::vector<std::string>;

TEST(StepAppliesTo, ByRoleFamilyAndCondition) {
  const Inventory inv = Cluster("");
  Step step;
  step.roles = {Role::kWorker};
  EXPECT_EQ(Targets(step, inv), (Names{"gpu", "cpu"}));
  step.roles = {Role::kMaster, Role::kStorage};
  EXPECT_EQ(Targets(step, inv), (Names{"m1", "s1"}));
  step.roles = {Role::kWorker};
  step.families = {OsFamily::kRhel};
  EXPECT_EQ(Targets(step, inv), Names{"gpu"});
  step.families = {};
  step.when = {StepCondition::kHasGpus};
  EXPECT_EQ(Targets(step, inv), Names{"gpu"});
  step.when = {StepCondition::kAlways, StepCondition::kHasIb};
  EXPECT_EQ(Targets(step, inv), Names{"gpu"});
  step.when = {StepCondition::kKubernetes};
  EXPECT_EQ(Targets(step, inv), (Names{"gpu", "cpu"}));
  step.when = {StepCondition::kSlurm};
  EXPECT_TRUE(Targets(step, inv).empty());
  step.when = {StepCondition::kDocker};
  EXPECT_TRUE(Targets(step, inv).empty());
  EXPECT_EQ(Targets(step, Cluster("policy: {docker: true}\n")), (Names{"gpu", "cpu"}));
  step.when = {StepCondition::kSlurm};
  EXPECT_EQ(Targets(step, Cluster("orchestrator: slurm\n")), (Names{"gpu", "cpu"}));
}

TEST(StepAppliesTo, NfsConditions) {
  Step step;
  step.roles = {Role::kMaster, Role::kWorker, Role::kStorage};
  step.when = {StepCondition::kNfs};
  EXPECT_TRUE(Targets(step, Cluster("")).empty());
  const Inventory inv =
      Cluster("nfs:\n  exports: [{path: /data}]\n  mounts: [{export: /data, path: /data}]\n");
  EXPECT_EQ(Targets(step, inv).size(), 4U);
  step.when = {StepCondition::kNfsServer};
  EXPECT_EQ(Targets(step, inv), Names{"s1"});
  step.when = {StepCondition::kNfsClient};
  EXPECT_EQ(Targets(step, inv), (Names{"m1", "gpu", "cpu"}));
  // Exports without mounts: nobody is a client.
  EXPECT_TRUE(Targets(step, Cluster("nfs:\n  exports: [{path: /data}]\n")).empty());
}

TEST(StepChangeFor, MissingFamilyIsNull) {
  Step step;
  step.change[OsFamily::kDebian] = "apt-get install -y x";
  EXPECT_EQ(*step.ChangeFor(OsFamily::kDebian), "apt-get install -y x");
  EXPECT_EQ(step.ChangeFor(OsFamily::kRhel), nullptr);
}

std::string DigestOf(const std::string& text) {
  Diagnostics diagnostics;
  auto catalog = Catalog::Parse(text, "pb.yaml", diagnostics);
  EXPECT_TRUE(catalog) << diagnostics.Format();
  return catalog ? catalog->Digest() : "";
}

TEST(CatalogDigest, ChangesWithWhatApplyWouldDoOnly) {
  const std::string base = "steps:\n" + StepText("a", "    params: [driver_branch]\n");
  const std::string digest = DigestOf(base);
  EXPECT_EQ(digest.size(), 16U);
  EXPECT_EQ(digest, DigestOf(base));
  std::string script = base;
  script.replace(script.find("touch /x"), 8, "touch /y");
  EXPECT_NE(digest, DigestOf(script));
  std::string probe = base;
  probe.replace(probe.find("test -e /x"), 10, "test -f /x");
  EXPECT_NE(digest, DigestOf(probe));
  EXPECT_NE(digest, DigestOf(base + "    reboot: true\n"));
  EXPECT_NE(digest, DigestOf(base + "    when: [has_gpus]\n"));
  EXPECT_NE(digest, DigestOf("steps:\n" + StepText("b", "    params: [driver_branch]\n")));
  EXPECT_NE(digest, DigestOf("steps:\n" + StepText("a", "    params: [cuda_version]\n")));
  // Rewording or moving a step leaves saved plans valid.
  EXPECT_EQ(digest, DigestOf(base + "    description: Touch x\n"));
  EXPECT_EQ(digest, DigestOf("# moved down a line\n" + base));
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

TEST(DefaultPlaybookDir, EnvironmentWinsElseTheSourceTree) {
  const char* saved = std::getenv("GPUCTL_PLAYBOOKS");
  const std::string restore = saved != nullptr ? saved : "";
  setenv("GPUCTL_PLAYBOOKS", "/opt/playbooks", 1);
  EXPECT_EQ(DefaultPlaybookDir(), "/opt/playbooks");
  unsetenv("GPUCTL_PLAYBOOKS");
  // The test binary is not installed, so no share/gpuctl/playbooks beside it.
  EXPECT_EQ(DefaultPlaybookDir(), std::string(GPUCTL_SOURCE_DIR) + "/playbooks");
  if (saved != nullptr) {
    setenv("GPUCTL_PLAYBOOKS", restore.c_str(), 1);
  }
}

}  // namespace
}  // namespace gpuctl
