// Catalog parsing: each error case at its exact position, and the graph checks.
#include "gpuctl/model/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuctl {
namespace {

using ::testing::HasSubstr;

struct Parsed {
  std::optional<Catalog> catalog;
  Diagnostics diagnostics;
};

Parsed ParseText(const std::string& text) {
  Parsed p;
  p.catalog = Catalog::Parse(text, "pb.yaml", p.diagnostics);
  return p;
}

// Passes when some error reads "pb.yaml:<line>:<column>: error: ..." and
// contains `fragment`.
::testing::AssertionResult HasError(const Diagnostics& diagnostics, int line, int column,
                                    const std::string& fragment) {
  const std::string prefix =
      "pb.yaml:" + std::to_string(line) + ":" + std::to_string(column) + ": error: ";
  for (const auto& d : diagnostics.All()) {
    const std::string text = d.Format();
    if (text.rfind(prefix, 0) == 0 && text.find(fragment) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure() << "no " << prefix << "..." << fragment << " among:\n"
                                       << diagnostics.Format();
}

// A step whose id, dependencies and extra lines a test chooses.
std::string CatalogStepText(const std::string& id, const std::string& extra = "") {
  return "  - id: " + id +
         "\n"
         "    roles: [worker]\n"
         "    probe: test -e /x\n"
         "    change: {any: touch /x}\n" +
         extra;
}

TEST(CatalogParse, ReadsEveryField) {
  auto p = ParseText(R"(steps:
  - id: os.modules
    roles: [master, worker]
    probe: exit 0
    change: {any: "true"}
  - id: gpu.nouveau-blacklist
    description: Keep nouveau off the GPUs
    roles: [worker]
    os: [debian, rhel]
    when: [has_gpus]
    depends:
      - os.modules
      - {step: os.modules, on: master}
    params: [driver_branch]
    secrets: [munge_key]
    inputs:
      - {name: join_command, script: kubeadm token create --print-join-command, secret: true}
      - {name: ca_hash, from: master, script: cat /etc/kubernetes/ca.hash}
    probe: |
      grep -q nouveau /etc/modprobe.d/blacklist-nouveau.conf
    change:
      apt: echo apt
      dnf: echo dnf
    verify: lsmod | grep -qv nouveau
    reboot: true
)");
  ASSERT_TRUE(p.catalog) << p.diagnostics.Format();
  EXPECT_TRUE(p.diagnostics.All().empty());
  ASSERT_EQ(p.catalog->steps().size(), 2U);
  const Step& s = p.catalog->steps()[1];
  EXPECT_EQ(s.id, "gpu.nouveau-blacklist");
  EXPECT_EQ(s.description, "Keep nouveau off the GPUs");
  EXPECT_EQ(s.roles, std::set<Role>{Role::kWorker});
  EXPECT_EQ(s.families, (std::set<OsFamily>{OsFamily::kDebian, OsFamily::kRhel}));
  EXPECT_EQ(s.when, std::vector<StepCondition>{StepCondition::kHasGpus});
  ASSERT_EQ(s.depends.size(), 2U);
  EXPECT_FALSE(s.depends[0].on_role);
  EXPECT_EQ(s.depends[1].on_role, Role::kMaster);
  EXPECT_EQ(s.depends[1].where.line, 13);
  EXPECT_EQ(s.params, std::vector<std::string>{"driver_branch"});
  EXPECT_EQ(s.secrets, std::vector<std::string>{"munge_key"});
  ASSERT_EQ(s.inputs.size(), 2U);
  EXPECT_EQ(s.inputs[0].name, "join_command");
  EXPECT_EQ(s.inputs[0].from, Role::kMaster);
  EXPECT_TRUE(s.inputs[0].secret);
  EXPECT_EQ(s.inputs[1].script, "cat /etc/kubernetes/ca.hash");
  EXPECT_FALSE(s.inputs[1].secret);
  EXPECT_EQ(s.inputs[1].where.line, 18);
  EXPECT_EQ(s.probe, "grep -q nouveau /etc/modprobe.d/blacklist-nouveau.conf\n");
  EXPECT_EQ(*s.ChangeFor(OsFamily::kDebian), "echo apt");
  EXPECT_EQ(*s.ChangeFor(OsFamily::kRhel), "echo dnf");
  EXPECT_EQ(s.verify, "lsmod | grep -qv nouveau");
  EXPECT_TRUE(s.reboot);
  EXPECT_EQ(s.file, "pb.yaml");
  EXPECT_EQ(s.where.line, 6);
  EXPECT_EQ(s.where.column, 5);
  EXPECT_EQ(p.catalog->Find("os.modules"), &p.catalog->steps()[0]);
  EXPECT_EQ(p.catalog->Find("nope"), nullptr);
}

TEST(CatalogParse, DefaultsAndAnyFillsBothFamilies) {
  auto p = ParseText("steps:\n" + CatalogStepText("a"));
  ASSERT_TRUE(p.catalog) << p.diagnostics.Format();
  const Step& s = p.catalog->steps()[0];
  EXPECT_TRUE(s.families.empty());
  EXPECT_TRUE(s.when.empty());
  EXPECT_FALSE(s.reboot);
  EXPECT_EQ(s.verify, s.probe);
  EXPECT_EQ(*s.ChangeFor(OsFamily::kDebian), "touch /x");
  EXPECT_EQ(*s.ChangeFor(OsFamily::kRhel), "touch /x");
}

TEST(CatalogErrors, Syntax) {
  auto p = ParseText("steps:\n  - id: a\n    roles: [worker\n");
  EXPECT_FALSE(p.catalog);
  EXPECT_THAT(p.diagnostics.Format(), HasSubstr("pb.yaml:4:1: error: invalid YAML"));
}

TEST(CatalogChangeParams, GoToTheChangeOnlyAndCountInTheDigest) {
  auto p =
      ParseText("steps:\n" +
                CatalogStepText("a", "    params: [hosts_sha256]\n    change_params: [hosts]\n"));
  ASSERT_TRUE(p.catalog) << p.diagnostics.Format();
  const Step& step = p.catalog->steps().front();
  EXPECT_EQ(step.change_params, std::vector<std::string>{"hosts"});
  auto without = ParseText("steps:\n" + CatalogStepText("a", "    params: [hosts_sha256]\n"));
  ASSERT_TRUE(without.catalog);
  EXPECT_NE(p.catalog->Digest(), without.catalog->Digest());
}

TEST(CatalogChangeParams, AProbeOrVerifyThatReadsOneIsAnError) {
  // $GPUCTL_HOSTS_SHA256 is another variable: it does not count.
  auto ok = ParseText(
      "steps:\n  - id: a\n    roles: [worker]\n    params: [hosts_sha256]\n"
      "    change_params: [hosts]\n    probe: test \"$GPUCTL_HOSTS_SHA256\" = x\n"
      "    change: {any: echo \"$GPUCTL_HOSTS\"}\n");
  EXPECT_TRUE(ok.catalog) << ok.diagnostics.Format();
  auto probe = ParseText(
      "steps:\n  - id: a\n    roles: [worker]\n    change_params: [hosts]\n"
      "    probe: echo \"$GPUCTL_HOSTS\"\n    change: {any: true}\n");
  EXPECT_TRUE(HasError(probe.diagnostics, 4, 20, "the probe reads $GPUCTL_HOSTS"));
  auto verify = ParseText(
      "steps:\n  - id: a\n    roles: [worker]\n    change_params: [hosts]\n"
      "    probe: true\n    change: {any: true}\n    verify: echo $GPUCTL_HOSTS\n");
  EXPECT_TRUE(HasError(verify.diagnostics, 4, 20, "the verification reads $GPUCTL_HOSTS"));
  auto both = ParseText("steps:\n" +
                        CatalogStepText("a", "    params: [hosts]\n    change_params: [hosts]\n"));
  EXPECT_TRUE(HasError(both.diagnostics, 7, 20, "'hosts' is in both params and change_params"));
  auto unknown = ParseText("steps:\n" + CatalogStepText("a", "    change_params: [hostz]\n"));
  EXPECT_TRUE(HasError(unknown.diagnostics, 6, 21, "unknown parameter 'hostz'"));
}

TEST(CatalogErrors, UnknownKeysWithSuggestion) {
  auto p = ParseText("steps:\n" + CatalogStepText("a", "    dependz: [b]\n") + "stepz: []\n");
  EXPECT_TRUE(HasError(p.diagnostics, 6, 5, "unknown key 'dependz' (did you mean 'depends'?)"));
  EXPECT_TRUE(HasError(p.diagnostics, 7, 1, "unknown key 'stepz' (did you mean 'steps'?)"));
}

TEST(CatalogErrors, WrongTypes) {
  auto p = ParseText(R"(steps:
  - id: a
    roles: worker
    probe: [x]
    change: echo
    reboot: maybe
    depends: [[b]]
)");
  EXPECT_TRUE(HasError(p.diagnostics, 3, 12, "expected a list, got 'worker'"));
  EXPECT_TRUE(HasError(p.diagnostics, 4, 12, "expected a string, got a list"));
  EXPECT_TRUE(HasError(p.diagnostics, 5, 13, "expected a mapping, got 'echo'"));
  EXPECT_TRUE(HasError(p.diagnostics, 6, 13, "expected true or false, got 'maybe'"));
  EXPECT_TRUE(HasError(p.diagnostics, 7, 15, "expected a step id or {step, on}, got a list"));
}

TEST(CatalogErrors, MissingRequired) {
  auto p = ParseText("steps:\n  - description: nothing else\n  - description: nor here\n");
  for (const char* key : {"id", "roles", "probe", "change"}) {
    EXPECT_TRUE(HasError(p.diagnostics, 2, 5, std::string("missing required key '") + key + "'"));
  }
  // Two steps without ids are not duplicates of each other.
  EXPECT_EQ(p.diagnostics.ErrorCount(), 8U) << p.diagnostics.Format();
  EXPECT_TRUE(HasError(ParseText("{}\n").diagnostics, 1, 1, "missing required key 'steps'"));
}

TEST(CatalogErrors, BadIdCharacters) {
  auto p = ParseText("steps:\n" + CatalogStepText("GPU_Driver"));
  EXPECT_TRUE(HasError(p.diagnostics, 2, 9, "invalid step id 'GPU_Driver'"));
}

TEST(CatalogErrors, DuplicateIdsNameBothPlaces) {
  auto p = ParseText("steps:\n" + CatalogStepText("a") + CatalogStepText("a"));
  EXPECT_TRUE(
      HasError(p.diagnostics, 6, 5, "duplicate step id 'a' (first defined at pb.yaml:2:5)"));
}

TEST(CatalogErrors, UnknownDependencyWithSuggestion) {
  auto p = ParseText("steps:\n" + CatalogStepText("os.modules") +
                     CatalogStepText("b", "    depends: [os.module, {step: zzz, on: master}]\n"));
  EXPECT_TRUE(HasError(p.diagnostics, 10, 15,
                       "unknown step 'os.module' in depends (did you mean 'os.modules'?)"));
  EXPECT_TRUE(HasError(p.diagnostics, 10, 33, "unknown step 'zzz' in depends"));
}

TEST(CatalogErrors, UnknownNames) {
  auto p = ParseText(R"(steps:
  - id: a
    roles: [wroker]
    os: [centos]
    when: [has_gpu]
    params: [driver]
    secrets: [not a name]
    depends: [{step: b, on: boss}]
    probe: x
    change: {any: x}
)");
  EXPECT_TRUE(HasError(p.diagnostics, 3, 13, "unknown role 'wroker' (did you mean 'worker'?)"));
  EXPECT_TRUE(HasError(p.diagnostics, 4, 10, "unknown OS family 'centos'; known: debian, rhel"));
  EXPECT_TRUE(
      HasError(p.diagnostics, 5, 12, "unknown condition 'has_gpu' (did you mean 'has_gpus'?)"));
  EXPECT_TRUE(HasError(p.diagnostics, 6, 14, "unknown parameter 'driver'"));
  EXPECT_TRUE(HasError(p.diagnostics, 7, 15, "unknown secret 'not a name'"));
  EXPECT_TRUE(HasError(p.diagnostics, 8, 29, "unknown role 'boss'"));
}

TEST(CatalogErrors, BadInputs) {
  auto p = ParseText(R"(steps:
  - id: a
    roles: [worker]
    params: [node_name]
    inputs:
      - {name: Join-Command, script: x}
      - {name: node_name, script: x}
      - {name: ok, from: boss, script: x}
      - {name: ok, script: x}
      - {name: nothing}
      - {name: hw, from: worker, each: true, secret: true, script: x}
    probe: x
    change: {any: x}
)");
  EXPECT_TRUE(HasError(p.diagnostics, 6, 16, "invalid input name 'Join-Command'"));
  EXPECT_TRUE(HasError(p.diagnostics, 11, 9, "input 'hw': a secret input is read from one node"));
  EXPECT_TRUE(HasError(p.diagnostics, 7, 16, "input 'node_name' clashes with a parameter"));
  EXPECT_TRUE(HasError(p.diagnostics, 8, 26, "unknown role 'boss'"));
  EXPECT_TRUE(HasError(p.diagnostics, 9, 16, "input 'ok' clashes"));
  EXPECT_TRUE(HasError(p.diagnostics, 10, 9, "missing required key 'script'"));
}

TEST(CatalogParse, ADeepValidationNeedsNoChange) {
  auto p = ParseText(
      "steps:\n  - id: validate.nccl\n    deep: true\n    roles: [master]\n"
      "    probe: all_reduce_perf\n");
  ASSERT_TRUE(p.catalog) << p.diagnostics.Format();
  EXPECT_TRUE(p.catalog->steps()[0].deep);
  EXPECT_TRUE(p.catalog->steps()[0].change.empty());
}

TEST(CatalogErrors, ADeepValidationHasNoChangeRebootOrVerify) {
  auto p = ParseText(R"(steps:
  - id: validate.nccl
    deep: true
    roles: [master]
    probe: all_reduce_perf
    change: {any: x}
    reboot: true
)");
  EXPECT_TRUE(HasError(p.diagnostics, 6, 5, "a deep validation has no 'change'"));
  EXPECT_TRUE(HasError(p.diagnostics, 7, 5, "a deep validation has no 'reboot'"));
}

TEST(CatalogSelect, AStepOrGroupWithEverythingItNeeds) {
  auto p = ParseText("steps:\n" + CatalogStepText("os.modules") + CatalogStepText("os.swap") +
                     CatalogStepText("k8s.init", "    depends: [os.modules]\n") +
                     CatalogStepText("k8s.join", "    depends: [{step: k8s.init, on: worker}]\n") +
                     CatalogStepText("slurm.node"));
  ASSERT_TRUE(p.catalog) << p.diagnostics.Format();
  std::string error;
  const Catalog join = p.catalog->Select({"k8s.join"}, error);
  EXPECT_TRUE(error.empty());
  std::vector<std::string> ids;
  for (const auto& s : join.steps()) ids.push_back(s.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"os.modules", "k8s.init", "k8s.join"}));
  EXPECT_EQ(join.prelude(), p.catalog->prelude());
  EXPECT_EQ(p.catalog->Select({"os"}, error).steps().size(), 2U);
  // "k8" is not a group: groups end at the dot.
  EXPECT_TRUE(p.catalog->Select({"k8"}, error).steps().empty());
  EXPECT_NE(error.find("--only 'k8' matches no step"), std::string::npos) << error;
}

TEST(CatalogErrors, ChangeMissingADeclaredFamily) {
  auto p = ParseText(R"(steps:
  - id: a
    roles: [worker]
    os: [rhel]
    probe: x
    change: {apt: x}
  - id: b
    roles: [worker]
    probe: x
    change: {dnf: x}
  - id: c
    roles: [worker]
    os: [debian]
    probe: x
    change: {apt: x}
)");
  EXPECT_EQ(p.diagnostics.ErrorCount(), 2U) << p.diagnostics.Format();
  EXPECT_TRUE(HasError(p.diagnostics, 6, 5,
                       "change has no 'dnf' (or 'any') script, but the step runs on rhel"));
  EXPECT_TRUE(HasError(p.diagnostics, 10, 5,
                       "no 'apt' (or 'any') script, but the step runs on "
                       "debian (no 'os' list: every family)"));
}

TEST(CatalogErrors, AnyBesideAFamily) {
  auto p = ParseText(R"(steps:
  - id: a
    roles: [worker]
    probe: x
    change: {any: x, apt: y}
)");
  EXPECT_TRUE(HasError(p.diagnostics, 5, 22, "'apt' beside 'any'"));
}

TEST(CatalogErrors, EmptyScriptsAndLists) {
  auto p = ParseText(R"(steps:
  - id: a
    roles: []
    os: []
    probe: "  "
    change: {any: x}
)");
  EXPECT_TRUE(HasError(p.diagnostics, 3, 12, "expected at least one of master, worker, storage"));
  EXPECT_TRUE(HasError(p.diagnostics, 4, 9, "expected at least one of debian, rhel"));
  EXPECT_TRUE(HasError(p.diagnostics, 5, 12, "empty probe script"));
}

TEST(CatalogGraph, TwoStepCycle) {
  auto p = ParseText("steps:\n" + CatalogStepText("a", "    depends: [b]\n") +
                     CatalogStepText("b", "    depends: [a]\n"));
  EXPECT_FALSE(p.catalog);
  EXPECT_TRUE(HasError(p.diagnostics, 2, 5, "dependency cycle: a -> b -> a"));
  EXPECT_EQ(p.diagnostics.ErrorCount(), 1U) << p.diagnostics.Format();
}

TEST(CatalogGraph, SelfAndLongerCyclesThroughCrossNodeDependencies) {
  auto p = ParseText("steps:\n" + CatalogStepText("self", "    depends: [self]\n") +
                     CatalogStepText("x", "    depends: [y]\n") +
                     CatalogStepText("y", "    depends: [{step: z, on: worker}]\n") +
                     CatalogStepText("z", "    depends: [x]\n") +
                     CatalogStepText("ok", "    depends: [x]\n"));
  EXPECT_TRUE(HasError(p.diagnostics, 2, 5, "dependency cycle: self -> self"));
  EXPECT_TRUE(HasError(p.diagnostics, 7, 5, "dependency cycle: x -> y -> z -> x"));
  EXPECT_EQ(p.diagnostics.ErrorCount(), 2U) << p.diagnostics.Format();
}

TEST(CatalogGraph, CrossNodeDependencyOnAStepThatRoleNeverRuns) {
  auto p = ParseText("steps:\n" + CatalogStepText("a") +
                     CatalogStepText("b", "    depends: [{step: a, on: master}]\n"));
  EXPECT_TRUE(HasError(p.diagnostics, 10, 22, "step 'a' never runs on master nodes"));
}

TEST(CatalogGraph, EveryErrorIsReported) {
  auto p =
      ParseText("steps:\n" + CatalogStepText("A") + CatalogStepText("b", "    depends: [c]\n") +
                CatalogStepText("b", "    reboot: sometimes\n"));
  EXPECT_EQ(p.diagnostics.ErrorCount(), 4U) << p.diagnostics.Format();
}

// common: (shell a step's scripts share) goes at the head of each.
const char* const kCommonStep = R"(steps:
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
  auto p = ParseText(kCommonStep);
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

// `state: absent`: a removal step, for nodes leaving the cluster (catalog.h).
TEST(CatalogStateTest, AnUnknownStepStateIsALoadError) {
  auto p = ParseText(R"(steps:
  - id: node.leave
    roles: [worker]
    probe: test -e /x
    change: {any: touch /x}
    state: gone
)");
  EXPECT_FALSE(p.catalog);
  EXPECT_TRUE(HasError(p.diagnostics, 6, 12, "unknown state 'gone'"));
}

TEST(CatalogStateTest, StatePresentIsAnOrdinaryStep) {
  auto p = ParseText(R"(steps:
  - id: worker.setup
    roles: [worker]
    probe: test -e /x
    change: {any: touch /x}
    state: present
)");
  ASSERT_TRUE(p.catalog) << p.diagnostics.Format();
  EXPECT_FALSE(p.catalog->steps()[0].leaving);
}

TEST(CatalogStateTest, ADeepValidationCannotBeALeavingStep) {
  auto p = ParseText(R"(steps:
  - id: validate.leave
    deep: true
    state: absent
    roles: [worker]
    probe: exit 0
)");
  EXPECT_FALSE(p.catalog);
  EXPECT_TRUE(HasError(p.diagnostics, 4, 12, "a deep validation checks a cluster's members"));
}

}  // namespace
}  // namespace gpuctl
