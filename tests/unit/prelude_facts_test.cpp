// The prelude's facts (docs/playbooks.md#facts): gpuctl_gather_facts reads
// the packages (one dpkg-query or rpm), the catalog's services (one
// systemctl show) once per batch, and the helpers answer from them with
// shell builtins; without a gather (a change, its verification) or for
// another OS family they ask the live system. The tools are stubs that log
// each call, so a test sees which answers came from facts and which live.
#include <gtest/gtest.h>

#include <fstream>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::Slurp;
using testing::StepHarness;

constexpr const char* kFactsInventory = R"(cluster: t
versions: {driver_branch: "550"}
nodes:
  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
  - {name: worker1, address: 198.18.0.11, os: rocky-9, roles: [worker]}
)";

class PreludeFactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string calls = ShellQuote((h_.dir() / "calls").string());
    // The gather's query lists the database; a live query (one package)
    // answers from the same table, and both are logged.
    h_.Stub(
        "dpkg-query",
        "table='nvidia-driver-550 install ok installed|550.127.05-1\n"
        "kubelet hold ok installed|1.30.6-1.1\n"
        "old-tool deinstall ok config-files|2.0\n"
        "lib+x.y_z install ok installed|3:1.0'\n"
        "case \"$*\" in\n"
        "  *'${Package} ${Status}|${Version}'*) echo gather >>" +
            calls + "; [ -e " + ShellQuote((h_.dir() / "no-dpkg").string()) +
            " ] && exit 2; printf '%s\\n' \"$table\" ;;\n"
            "  *) eval \"n=\\${$#}\"; echo \"live dpkg-query $n\" >>" +
            calls +
            "\n"
            "     line=$(printf '%s\\n' \"$table\" | grep \"^$n \") || exit 1\n"
            "     st=${line#* }; st=${st%|*}; v=${line#*|}\n"
            "     case \"$*\" in *Package*) echo \"$n $st\" ;; *Status*) printf '%s' \"$st\" ;; "
            "*) printf '%s' \"$v\" ;; esac ;;\n"
            "esac");
    h_.Stub(
        "rpm",
        "case \"$1\" in\n"
        "  -qa) echo gather-rpm >>" +
            calls +
            "; printf 'chrony install ok installed|4.3-2\\nkernel install ok "
            "installed|5.14-1\\nkernel install ok installed|5.14-2\\n' ;;\n"
            "  *) echo \"live rpm $*\" >>" +
            calls +
            "; case \" $* \" in *' chrony '*) [ \"$2\" = --qf ] && printf 4.3-2; exit 0 ;; esac; "
            "exit 1 ;;\n"
            "esac");
    // systemctl show: one block per unit after "--", as systemd prints
    // them; chrony and kubelet are active and enabled (since @1000), the
    // rest inactive without a unit file. is-* are live queries.
    h_.Stub("systemctl",
            "case \"$1\" in\n"
            "  show) echo show >>" +
                calls + "; [ -e " + ShellQuote((h_.dir() / "no-systemctl").string()) +
                " ] && exit 1\n"
                "    while [ \"$1\" != -- ]; do shift; done; shift; first=1\n"
                "    for u in \"$@\"; do\n"
                "      [ -n \"$first\" ] || echo; first=''\n"
                "      case \"$u\" in chrony | kubelet) printf "
                "'ActiveState=active\\nUnitFileState=enabled\\nLoadState=loaded\\n"
                "ActiveEnterTimestamp=@1000\\n' ;;\n"
                "        *) printf 'ActiveState=inactive\\nUnitFileState=\\nLoadState=not-found\\n"
                "ActiveEnterTimestamp=\\n' ;; esac\n"
                "    done ;;\n"
                "  *) echo \"live systemctl $*\" >>" +
                calls +
                "; exit 3 ;;\n"
                "esac");
  }
  testing::StepRun Run(const std::string& script, const std::string& node = "master1") {
    std::filesystem::remove(h_.dir() / "calls");
    return h_.Script(script, "gpu.driver", node);
  }
  [[nodiscard]] std::string Calls() const { return Slurp(h_.dir() / "calls"); }
  StepHarness h_{kFactsInventory};
};

constexpr const char* kPackageChecks =
    "pkg_installed nvidia-driver-550 && echo driver-installed\n"
    "pkg_installed old-tool || echo old-tool-not-installed\n"
    "pkg_installed absent || echo absent-not-installed\n"
    "pkg_installed 'lib+x.y_z' && echo special-installed\n"
    "echo \"version=$(pkg_version kubelet)\"\n"
    "pkg_ver old-tool; echo \"ver=$pkg_v\"\n"
    "pkg_ver absent; echo \"absent=[$pkg_v]\"\n"
    "pkg_held kubelet && echo kubelet-held\n"
    "pkg_held nvidia-driver-550 || echo driver-not-held\n"
    "pkg_state old-tool\n"
    "pkg_state nvidia-driver-550 && echo driver-state-ok\n";

constexpr const char* kPackageAnswers =
    "driver-installed\nold-tool-not-installed\nabsent-not-installed\nspecial-installed\n"
    "version=1.30.6-1.1\nver=2.0\nabsent=[]\nkubelet-held\ndriver-not-held\n"
    "old-tool is not installed (only its configuration files remain)\ndriver-state-ok\n";

TEST_F(PreludeFactsTest, PackagesComeFromOneQueryInABatch) {
  // Each probe of a batch is a subshell of the shell that gathered.
  const auto run = Run(std::string("gpuctl_gather_facts debian\n(\n") + kPackageChecks + ")");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, kPackageAnswers);
  EXPECT_EQ(Calls(), "gather\nshow\n");
}

TEST_F(PreludeFactsTest, OutsideABatchTheHelpersAskLiveAndAgree) {
  // The same answers, from one dpkg-query per question: a verification
  // after a change never reads facts gathered before it.
  const auto run = Run(kPackageChecks);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, kPackageAnswers);
  const std::string calls = Calls();
  EXPECT_EQ(calls.find("gather"), std::string::npos) << calls;
  EXPECT_NE(calls.find("live dpkg-query nvidia-driver-550"), std::string::npos) << calls;
  EXPECT_NE(calls.find("live dpkg-query kubelet"), std::string::npos) << calls;
}

TEST_F(PreludeFactsTest, AFailedGatherLeavesTheHelpersLive) {
  std::ofstream(h_.dir() / "no-dpkg") << "";
  std::ofstream(h_.dir() / "no-systemctl") << "";
  const auto run =
      Run("gpuctl_gather_facts debian\npkg_installed nvidia-driver-550 && echo yes\n"
          "svc_active chrony || echo inactive");
  EXPECT_EQ(run.out, "yes\ninactive\n");
  EXPECT_EQ(Calls(),
            "gather\nshow\nlive dpkg-query nvidia-driver-550\nlive systemctl is-active --quiet "
            "chrony\n");
}

TEST_F(PreludeFactsTest, FactsOfAnotherFamilyAreNotUsed) {
  // Gathered for debian; a probe of the rhel family asks rpm live.
  const auto run =
      Run("gpuctl_gather_facts debian\nGPUCTL_OS_FAMILY=rhel\n"
          "pkg_installed chrony && echo chrony");
  EXPECT_EQ(run.out, "chrony\n");
  EXPECT_NE(Calls().find("live rpm -q --quiet chrony"), std::string::npos) << Calls();
}

TEST_F(PreludeFactsTest, RpmFactsConcatenateVersionsAsRpmPrintsThem) {
  const auto run =
      Run("gpuctl_gather_facts rhel\npkg_installed chrony && echo chrony\n"
          "echo \"kernel=$(pkg_version kernel)\"\npkg_state absent",
          "worker1");
  EXPECT_EQ(run.out, "chrony\nkernel=5.14-15.14-2\nabsent is not installed\n");
  EXPECT_EQ(Calls(), "gather-rpm\nshow\n");
}

TEST_F(PreludeFactsTest, ServicesComeFromOneSystemctlShow) {
  const std::string f = (h_.dir() / "conf").string();
  std::ofstream(f) << "x\n";
  const auto run =
      Run("gpuctl_gather_facts debian\n"
          "svc_active chrony && echo chrony-active\n"
          "svc_enabled kubelet.service && echo kubelet-enabled\n"
          "svc_active munge || echo \"munge-inactive $?\"\n"
          "svc_enabled munge || echo munge-disabled\n"
          "svc_exists openibd || echo no-openibd\n"
          "svc_state nfs-server; echo \"nfs=[$svc_is_active][$svc_is_enabled]\"\n"
          // Active since @1000 (1970): a file written since then is newer.
          "unit_started_after chrony || echo never\n"
          "unit_started_after chrony " +
          f +
          " || echo conf-is-newer\n"
          "unit_started_after chrony /nonexistent && echo missing-counts-as-old\n");
  EXPECT_EQ(run.out,
            "chrony-active\nkubelet-enabled\nmunge-inactive 3\nmunge-disabled\nno-openibd\n"
            "nfs=[inactive][]\nconf-is-newer\nmissing-counts-as-old\n");
  // One show; the file's age from stat, no systemctl is-* at all.
  EXPECT_EQ(Calls(), "gather\nshow\n");
}

TEST_F(PreludeFactsTest, AUnitTheGatherDoesNotListIsAskedLive) {
  const auto run = Run("gpuctl_gather_facts debian\nsvc_active sshd || echo asked");
  EXPECT_EQ(run.out, "asked\n");
  EXPECT_NE(Calls().find("live systemctl is-active --quiet sshd"), std::string::npos) << Calls();
}

TEST_F(PreludeFactsTest, FileReadIsWhatCatGives) {
  const auto dir = h_.dir();
  std::ofstream(dir / "a") << "one\n  two \\n\n\n";
  std::ofstream(dir / "b") << "no newline";
  const auto run = Run("file_read " + ShellQuote((dir / "a").string()) +
                       " && [ \"$file_text\" = \"$(cat " + ShellQuote((dir / "a").string()) +
                       ")\" ] && echo a-same\n"
                       "file_is " +
                       ShellQuote((dir / "b").string()) +
                       " 'no newline' && echo b-same\n"
                       "file_read /nonexistent || echo \"missing [$file_text]\"\n");
  EXPECT_EQ(run.out, "a-same\nb-same\nmissing []\n");
}

TEST_F(PreludeFactsTest, GpuctlBlockReadsTheBlockAndCountsTheMarkers) {
  const auto dir = h_.dir();
  std::ofstream(dir / "ok") << "keep\n# BEGIN gpuctl\nline 1\n  line 2\n# END gpuctl\nkeep\n";
  std::ofstream(dir / "odd") << "# BEGIN gpuctl\nx\n# END gpuctl\n# BEGIN gpuctl\n";
  const auto run = Run("gpuctl_block " + ShellQuote((dir / "ok").string()) +
                       "; echo \"rc=$?\"\n"
                       "gpuctl_block " +
                       ShellQuote((dir / "odd").string()) +
                       "; echo \"rc=$?\"\n"
                       "gpuctl_block /nonexistent; echo \"rc=$?\"\n");
  EXPECT_EQ(run.out, "line 1\n  line 2\nrc=0\nrc=2\nrc=0\n");
}

TEST_F(PreludeFactsTest, RepoValIsWhatSedGave) {
  const auto run =
      Run("d='name=cuda\nuri=http://x/@VERSION_ID@/a/@VERSION_ID@\nurix=no\nname=second'\n"
          "GPUCTL_FACT_OS_VERSION_ID=9.4\n"
          "repo_val \"$d\" name; echo \"[$_rv]\"\n"
          "repo_val \"$d\" uri; echo \"[$_rv]\"\n"
          "repo_val \"$d\" components; echo \"[$_rv]\"\n"
          "echo \"[$(repo_get \"$d\" urix)]\"\n");
  EXPECT_EQ(run.out, "[cuda]\n[http://x/9.4/a/9.4]\n[]\n[no]\n");
}

}  // namespace
}  // namespace gpuctl
