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
                "      case \"$u\" in chrony | kubelet | gpuctl-opensm@*) printf "
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
  // `probe` as a batch runs it: a subshell of the shell that gathered the
  // (debian) facts.
  testing::StepRun RunInBatch(const std::string& probe) {
    return Run("gpuctl_gather_facts debian\n(\n" + probe + "\n)");
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
  const auto run = RunInBatch(kPackageChecks);
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

TEST_F(PreludeFactsTest, InstancesOfGpuctlTemplatesLinkedToStartAtBootAreGathered) {
  // gpuctl-opensm@mlx5_0-1 is linked into a target's wants, so the gather
  // shows it; mlx5_1-1 is not, so it is asked live.
  const auto wants = h_.dir() / "units" / "multi-user.target.wants";
  std::filesystem::create_directories(wants);
  std::filesystem::create_symlink("../gpuctl-opensm@.service",
                                  wants / "gpuctl-opensm@mlx5_0-1.service");
  const auto run = Run("_gpuctl_unit_dir=" + ShellQuote((h_.dir() / "units").string()) +
                       "\ngpuctl_gather_facts debian\n"
                       "svc_active gpuctl-opensm@mlx5_0-1 && echo first-active\n"
                       "svc_enabled gpuctl-opensm@mlx5_0-1.service && echo first-enabled\n"
                       "svc_active gpuctl-opensm@mlx5_1-1 || echo second-asked\n");
  EXPECT_EQ(run.out, "first-active\nfirst-enabled\nsecond-asked\n");
  EXPECT_EQ(Calls(), "gather\nshow\nlive systemctl is-active --quiet gpuctl-opensm@mlx5_1-1\n");
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

// nvidia-smi and ibstat as the gather asks them (the combined query, the
// full ibstat), each call logged; a single-field query is a live one.
class PreludeGpuIbFactsTest : public PreludeFactsTest {
 protected:
  void SetUp() override {
    PreludeFactsTest::SetUp();
    const std::string calls = ShellQuote((h_.dir() / "calls").string());
    const std::string broken = ShellQuote((h_.dir() / "no-driver").string());
    h_.Stub("nvidia-smi",
            "echo \"nvidia-smi $*\" >>" + calls + "\n[ -e " + broken +
                " ] && { echo 'NVIDIA-SMI has failed because it could not communicate with the "
                "NVIDIA driver.'; exit 9; }\n"
                "case \"$1\" in\n"
                "  --query-gpu=index,name,driver_version,persistence_mode,mig.mode.current,"
                "mig.mode.pending)\n"
                "    printf '0, NVIDIA H100 80GB HBM3, 550.127.05, Enabled, Enabled, Disabled\\n"
                "1, NVIDIA H100 80GB HBM3, 550.127.05, Disabled, Disabled, Enabled\\n' ;;\n"
                "  --query-gpu=driver_version) printf '550.127.05\\n550.127.05\\n' ;;\n"
                "  *) echo \"unexpected $*\" >&2; exit 2 ;;\n"
                "esac");
    h_.Stub("ibstat",
            "echo ibstat >>" + calls +
                "\nprintf \"CA 'mlx5_0'\\n\\tNumber of ports: 2\\n\\tPort 1:\\n\\t\\tState: "
                "Active\\n\\t\\tRate: 400\\n\\t\\tPort GUID: 0x1\\n\\tPort 2:\\n\\t\\tState: "
                "Down\\n\\t\\tRate: 10\\n\\t\\tPort GUID: 0x2\\nCA 'mlx5_1'\\n\\tPort 1:\\n\\t\\t"
                "State: Initializing\\n\\t\\tRate: 400\\n\\t\\tPort GUID: 0x3\\n\"");
  }
};

constexpr const char* kGpuIbChecks =
    "gpu_query driver_version\n"
    "gpu_query name,driver_version\n"
    "gpu_query index,mig.mode.current,mig.mode.pending\n"
    "gpu_query persistence_mode\n"
    "ib_read && ib_port mlx5_0 2 && echo \"mlx5_0/2 $ib_state $ib_rate $ib_guid\"\n"
    "ib_read && ib_port mlx5_1 1 && echo \"mlx5_1/1 $ib_state\"\n"
    "ib_port mlx5_2 1 || echo no-mlx5_2\n"
    "ib_cas; echo \"cas=[$ib_ca_list]\"\n";

TEST_F(PreludeGpuIbFactsTest, OneNvidiaSmiAndOneIbstatServeABatch) {
  // Every answer is what nvidia-smi would print for those fields.
  const auto run = RunInBatch(kGpuIbChecks);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out,
            "550.127.05\n550.127.05\n"
            "NVIDIA H100 80GB HBM3, 550.127.05\nNVIDIA H100 80GB HBM3, 550.127.05\n"
            "0, Enabled, Disabled\n1, Disabled, Enabled\n"
            "Enabled\nDisabled\n"
            "mlx5_0/2 Down 10 0x2\nmlx5_1/1 Initializing\nno-mlx5_2\ncas=[mlx5_0\nmlx5_1]\n");
  EXPECT_EQ(Calls(),
            "gather\nshow\nnvidia-smi --query-gpu=index,name,driver_version,persistence_mode,"
            "mig.mode.current,mig.mode.pending --format=csv,noheader\nibstat\n");
}

TEST_F(PreludeGpuIbFactsTest, OutsideABatchNvidiaSmiAndIbstatAnswerEachTime) {
  const auto run = Run("gpu_query driver_version\nib_read; ib_read; ib_port mlx5_0 1 && echo up");
  EXPECT_EQ(run.out, "550.127.05\n550.127.05\nup\n");
  EXPECT_EQ(Calls(),
            "nvidia-smi --query-gpu=driver_version --format=csv,noheader\nibstat\nibstat\n");
}

TEST_F(PreludeGpuIbFactsTest, ADriverThatDoesNotAnswerIsAskedAgainAndItsWordsKept) {
  // The gather's query fails: no facts, and the probe's own query reports
  // nvidia-smi's message and status as before.
  std::ofstream(h_.dir() / "no-driver") << "";
  const auto run = RunInBatch("out=$(gpu_query driver_version 2>&1); echo \"rc=$? $out\"");
  EXPECT_EQ(run.out,
            "rc=9 NVIDIA-SMI has failed because it could not communicate with the NVIDIA "
            "driver.\n");
  const std::string calls = Calls();
  EXPECT_NE(calls.find("nvidia-smi --query-gpu=driver_version"), std::string::npos) << calls;
}

}  // namespace
}  // namespace gpuctl
