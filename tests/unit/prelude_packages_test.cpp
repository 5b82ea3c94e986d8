// The prelude's package helpers (docs/playbooks.md#packages): pkg_state
// reads a real dpkg status database (tests/fixtures/dpkg/, captured from real
// dpkg runs: a postinst that failed, an unpack without configure, a held
// package, a removed one with its conffiles) through the real dpkg-query;
// pkg_install repairs an interrupted transaction before it installs, pays one
// `dpkg --audit` on a healthy node, and ends a failure with the lines that
// explain it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::Slurp;
using testing::StepHarness;

constexpr const char* kPackagesInventory = R"(cluster: t
versions: {driver_branch: "550"}
nodes:
  - {name: master1, address: 198.18.0.10, os: ubuntu-22.04, roles: [master]}
)";

class PreludePackagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
    if (std::system("command -v dpkg-query >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "dpkg-query is not installed here";
    }
    // The real dpkg-query, on the captured status database.
    h_.Stub("dpkg-query", "exec /usr/bin/dpkg-query --admindir=" +
                              ShellQuote(StepHarness::Fixture("dpkg/interrupted-admindir")) +
                              " \"$@\"");
  }
  testing::StepRun Run(const std::string& script) {
    return h_.Script(script, "gpu.driver", "master1");
  }
  StepHarness h_{kPackagesInventory};
};

TEST_F(PreludePackagesTest, StateNamesWhatDpkgLeft) {
  const auto run =
      Run("for p in nvidia-dkms-550 nvidia-kernel-common-550 nvidia-fabricmanager-550 "
          "nvidia-driver-550 nvidia-utils-550; do pkg_state \"$p\"; echo \"$p=$?\"; done");
  EXPECT_NE(run.out.find("nvidia-dkms-550 is half-configured (iF): its postinst failed\n"
                         "nvidia-dkms-550=1"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("nvidia-kernel-common-550 is unpacked but not configured (iU)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("nvidia-fabricmanager-550 is not installed (only its configuration "
                         "files remain)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("nvidia-driver-550 is not installed\nnvidia-driver-550=1"),
            std::string::npos)
      << run.out;
  // Held and installed: nothing to say.
  EXPECT_NE(run.out.find("\nnvidia-utils-550=0"), std::string::npos) << run.out;
}

TEST_F(PreludePackagesTest, AProbeSaysWhatStateThePackageIsIn) {
  // gpu.driver's probe on a node without the driver package, whose archive
  // has it (else the preflight refuses: preflight_test.cpp).
  h_.StubFixture("apt-cache", "apt/apt-cache-madison-nvidia-driver-550.txt");
  const auto run = h_.Probe("gpu.driver", "master1");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("nvidia-driver-550 is not installed"), std::string::npos) << run.out;
}

// Stubs for pkg_install: dpkg answers --audit from `audit` (a file), apt-get
// logs its calls and fails `install` while `fail` exists, printing the real
// failed run's output.
class PkgInstallTest : public PreludePackagesTest {
 protected:
  void SetUp() override {
    PreludePackagesTest::SetUp();
    const std::string d = ShellQuote(h_.dir().string());
    h_.Stub("dpkg", "echo \"dpkg $*\" >>" + d + "/calls\ncase \"$1\" in --audit) cat " + d +
                        "/audit 2>/dev/null ;; --configure) rm -f " + d + "/audit ;; esac");
    h_.Stub("apt-get", "echo \"apt-get $*\" >>" + d + "/calls\n" +
                           "case \" $* \" in *' install '*)\n" + "  if [ -e " + d +
                           "/fail ]; then echo 'debconf: delaying package configuration, since "
                           "apt-utils is not installed'; cat " +
                           ShellQuote(StepHarness::Fixture("dpkg/postinst-failed-install.txt")) +
                           "; echo 'E: Sub-process /usr/bin/dpkg returned an error code (1)' >&2; "
                           "exit 100; fi ;;\n"
                           "esac\nexit 0");
  }
  std::string Calls() const { return Slurp(h_.dir() / "calls"); }
};

TEST_F(PkgInstallTest, AHealthyNodePaysOneAudit) {
  const auto run = Run("pkg_install chrony && echo installed");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("installed"), std::string::npos) << run.out;
  const std::string calls = Calls();
  EXPECT_EQ(calls.find("dpkg --configure"), std::string::npos) << calls;
  EXPECT_EQ(calls.find("apt-get -f"), std::string::npos) << calls;
  EXPECT_NE(calls.find("dpkg --audit\napt-get -y -q"), std::string::npos) << calls;
}

TEST_F(PkgInstallTest, AnInterruptedTransactionIsRepairedFirst) {
  std::filesystem::copy_file(StepHarness::Fixture("dpkg/audit-interrupted.txt"),
                             h_.dir() / "audit");
  const auto run = Run("pkg_install chrony && echo installed");
  EXPECT_EQ(run.status, 0) << run.out;
  const std::string calls = Calls();
  const auto configure = calls.find("dpkg --configure -a");
  const auto fix = calls.find("apt-get -f install");
  const auto install = calls.find("install chrony");
  ASSERT_NE(configure, std::string::npos) << calls;
  ASSERT_NE(install, std::string::npos) << calls;
  // apt-get check (the stub says all is well) and the audit, now empty,
  // spare the -f install.
  EXPECT_EQ(fix, std::string::npos) << calls;
  EXPECT_LT(configure, install) << calls;
  EXPECT_NE(run.out.find("repairing"), std::string::npos) << run.out;
}

TEST_F(PkgInstallTest, AFailureEndsWithTheLinesThatExplainIt) {
  std::ofstream(h_.dir() / "fail") << "";
  const auto run = Run("pkg_install nvidia-dkms-550\necho went on");
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.out.find("went on"), std::string::npos) << run.out;
  // The last lines are dpkg's and apt's own, not debconf's noise.
  const std::string tail = run.out.substr(run.out.rfind("debconf:"));
  const auto explain = tail.find(
      "dpkg: error processing package nvidia-dkms-550 (--install):\n"
      " installed nvidia-dkms-550 package post-installation script "
      "subprocess returned error exit status 1\n");
  EXPECT_NE(explain, std::string::npos) << run.out;
  EXPECT_TRUE(run.out.ends_with("E: Sub-process /usr/bin/dpkg returned an error code (1)\n"))
      << run.out;
}

}  // namespace
}  // namespace gpuctl
