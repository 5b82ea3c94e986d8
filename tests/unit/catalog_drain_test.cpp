// A playbook's `restarts:` and `drain:` (model/drain.h): what the loader
// accepts, what it refuses (at the line and column), which drain applies to
// a node, and that both count in the digest a saved plan records.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/view/catalog_view.h"

namespace gpuctl {
namespace {

using ::testing::HasSubstr;

constexpr const char* kStep =
    "steps:\n"
    "  - id: containers.containerd\n"
    "    roles: [worker]\n"
    "    probe: test -e /x\n"
    "    change: {any: touch /x}\n";

constexpr const char* kDrain =
    "drain:\n"
    "  description: kubectl drain\n"
    "  when: [kubernetes]\n"
    "  on: master\n"
    "  member: test -s /etc/kubernetes/kubelet.conf\n"
    "  drain: kubectl drain \"$GPUCTL_DRAIN_NODE\"\n"
    "  resume: kubectl uncordon \"$GPUCTL_DRAIN_NODE\"\n";

std::optional<Catalog> Parse(const std::string& text, Diagnostics& diagnostics) {
  return Catalog::Parse(text, "pb.yaml", diagnostics);
}

TEST(CatalogRestarts, NamesTheRuntimesAStepRestarts) {
  Diagnostics diagnostics;
  auto catalog = Parse(std::string(kStep) + "    restarts: [containerd, kubelet]\n", diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  const Step& step = catalog->steps().front();
  EXPECT_EQ(step.restarts, kRestartsContainerd | kRestartsKubelet);
  EXPECT_EQ(DescribeRestarts(step.restarts), "containerd, kubelet");
}

TEST(CatalogRestarts, AnUnknownRuntimeIsAnErrorAtItsPlace) {
  Diagnostics diagnostics;
  EXPECT_FALSE(Parse(std::string(kStep) + "    restarts: [containerd, slurmd]\n", diagnostics));
  EXPECT_THAT(diagnostics.Format(), HasSubstr("pb.yaml:6:28"));
  EXPECT_THAT(diagnostics.Format(), HasSubstr("slurmd"));
}

TEST(CatalogDrain, ReadsTheBlock) {
  Diagnostics diagnostics;
  auto catalog = Parse(std::string(kStep) + kDrain, diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  ASSERT_EQ(catalog->drains().size(), 1U);
  const Drain& drain = catalog->drains().front();
  EXPECT_EQ(drain.on, Role::kMaster);
  EXPECT_EQ(drain.when, std::vector<StepCondition>{StepCondition::kKubernetes});
  EXPECT_EQ(drain.member, "test -s /etc/kubernetes/kubelet.conf");
  EXPECT_EQ(drain.resume, "kubectl uncordon \"$GPUCTL_DRAIN_NODE\"");
  EXPECT_EQ(drain.where.line, 7);
}

TEST(CatalogDrain, EachPartIsRequiredAndChecked) {
  Diagnostics missing;
  EXPECT_FALSE(Parse(std::string(kStep) + "drain:\n  when: [kubernetes]\n  on: master\n", missing));
  EXPECT_THAT(missing.Format(), HasSubstr("member"));
  Diagnostics role;
  std::string text = std::string(kStep) + kDrain;
  text.replace(text.find("on: master"), 10, "on: boss");
  EXPECT_FALSE(Parse(text, role));
  EXPECT_THAT(role.Format(), HasSubstr("pb.yaml:9:7"));
  Diagnostics condition;
  text = std::string(kStep) + kDrain;
  text.replace(text.find("[kubernetes]"), 12, "[kubernets]");
  EXPECT_FALSE(Parse(text, condition));
  EXPECT_THAT(condition.Format(), HasSubstr("kubernetes"));
}

TEST(CatalogDrain, AppliesWhereItsConditionHolds) {
  Diagnostics diagnostics;
  auto catalog = Parse(std::string(kStep) + kDrain, diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  Inventory inventory;
  Node node;
  node.name = "w1";
  node.roles = {Role::kWorker};
  inventory.orchestrator = Orchestrator::kKubernetes;
  EXPECT_NE(catalog->DrainFor(node, inventory), nullptr);
  inventory.orchestrator = Orchestrator::kSlurm;
  EXPECT_EQ(catalog->DrainFor(node, inventory), nullptr);
}

TEST(CatalogDrain, RestartsAndDrainsCountInTheDigest) {
  Diagnostics diagnostics;
  const std::string base = Parse(kStep, diagnostics)->Digest();
  EXPECT_NE(base,
            Parse(std::string(kStep) + "    restarts: [containerd]\n", diagnostics)->Digest());
  const std::string drained = Parse(std::string(kStep) + kDrain, diagnostics)->Digest();
  EXPECT_NE(base, drained);
  std::string other = std::string(kStep) + kDrain;
  other.replace(other.find("  drain: kubectl drain"), 22, "  drain: kubectl drain --force");
  EXPECT_NE(drained, Parse(other, diagnostics)->Digest());
}

TEST(CatalogDrain, StepsMdAndTheLintedScriptsShowIt) {
  Diagnostics diagnostics;
  auto catalog = Parse(std::string(kStep) + "    restarts: [containerd]\n" + kDrain, diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  const std::string page = RenderCatalogMarkdown(*catalog);
  EXPECT_THAT(page, HasSubstr("|  |  | restarts containerd | `pb.yaml` |\n"));
  EXPECT_THAT(page, HasSubstr("\n## Drains\n"));
  EXPECT_THAT(page,
              HasSubstr("\n### kubernetes (`pb.yaml`)\n\nkubectl drain. Runs on the master.\n"));
  EXPECT_THAT(page, HasSubstr("Resume:\n\n```sh\nkubectl uncordon \"$GPUCTL_DRAIN_NODE\"\n```\n"));
  std::vector<std::string> names;
  for (const ScriptFile& file : CatalogScriptFiles(*catalog)) {
    names.push_back(file.name);
  }
  for (const char* kind : {"member", "drain", "resume"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), std::string("drain.pb.") + kind + ".sh"),
              names.end())
        << kind;
  }
}

}  // namespace
}  // namespace gpuctl
