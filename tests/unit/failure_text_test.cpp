// ExplainFailure on what failed commands really print: the lines that say why
// are picked out of the noise before them, in order, each once, within the
// line limit; with nothing recognised, the last lines as before.
#include "gpuctl/run/failure_text.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpuctl {
namespace {

struct Case {
  std::string name;
  std::string out;  // "{fixture:PATH}\n" stands for that file under tests/fixtures/
  std::string err;
  std::size_t max_lines;
  std::string expected;
};

// apt-get install's own lines around dpkg's (the fixture: the real dpkg run
// whose postinst exited 1), as pkg_install's tee shows them on stdout.
const std::string kAptPostinstLog =
    "Reading package lists...\n"
    "Building dependency tree...\n"
    "Reading state information...\n"
    "The following NEW packages will be installed:\n"
    "  nvidia-dkms-550\n"
    "0 upgraded, 1 newly installed, 0 to remove and 0 not upgraded.\n"
    "debconf: delaying package configuration, since apt-utils is not installed\n"
    "{fixture:dpkg/postinst-failed-install.txt}\n"
    "E: Sub-process /usr/bin/dpkg returned an error code (1)\n";

const std::string kPostinstExplained =
    "Error! Bad return status for module build on kernel\n"
    "dpkg: error processing package nvidia-dkms-550 (--install):\n"
    "  installed nvidia-dkms-550 package post-installation script subprocess returned error "
    "exit status 1\n"
    "Errors were encountered while processing:\n"
    "  nvidia-dkms-550\n"
    "E: Sub-process /usr/bin/dpkg returned an error code (1)";

const std::vector<Case> kCases = {
    {"AptPostinstThroughPkgInstall", kAptPostinstLog,
     // pkg_explain's copy on stderr: the same lines, shown once.
     "dpkg: error processing package nvidia-dkms-550 (--install):\n"
     "E: Sub-process /usr/bin/dpkg returned an error code (1)\n",
     6, kPostinstExplained},
    {"AptPostinstAllOnStderrWithDebconfFirst", "",
     "debconf: unable to initialize frontend: Dialog\n"
     "debconf: (No usable dialog-like program is installed, so the dialog based frontend cannot "
     "be used. at /usr/share/perl5/Debconf/FrontEnd/Dialog.pm line 78.)\n"
     "debconf: falling back to frontend: Readline\n"
     "dpkg-preconfigure: unable to re-open stdin: No such file or directory\n"
     "WARNING: apt does not have a stable CLI interface. Use with caution in scripts.\n" +
         kAptPostinstLog,
     6, kPostinstExplained},
    {"MoreExplainingLinesThanRoomKeepTheFirstAndTheLast", kAptPostinstLog, "", 3,
     "Error! Bad return status for module build on kernel\n"
     "dpkg: error processing package nvidia-dkms-550 (--install):\n"
     "E: Sub-process /usr/bin/dpkg returned an error code (1)"},
    // Captured: dpkg 1.21.22 -i of a package shipping a file another owns.
    {"DpkgFileConflict",
     "Selecting previously unselected package nvidia-demo-conflict.\n"
     "(Reading database ... 5 files and directories currently installed.)\n"
     "Preparing to unpack nvidia-demo-conflict.deb ...\n"
     "Unpacking nvidia-demo-conflict (1.0) ...\n",
     "dpkg: error processing archive nvidia-demo-conflict.deb (--install):\n"
     " trying to overwrite '/usr/share/demo/shared.txt', which is also in package "
     "nvidia-demo-owner 1.0\n"
     "Errors were encountered while processing:\n"
     " nvidia-demo-conflict.deb\n",
     6,
     "dpkg: error processing archive nvidia-demo-conflict.deb (--install):\n"
     "  trying to overwrite '/usr/share/demo/shared.txt', which is also in package "
     "nvidia-demo-owner 1.0\n"
     "Errors were encountered while processing:\n"
     "  nvidia-demo-conflict.deb"},
    {"DnfNothingProvides",
     "Last metadata expiration check: 0:02:11 ago on Tue 04 Jun 2024 10:12:03 AM UTC.\n",
     "Error: \n"
     " Problem: conflicting requests\n"
     "  - nothing provides libnvidia-ml.so.1()(64bit) needed by "
     "nvidia-fabric-manager-3:550.90.07-1.x86_64 from cuda-rhel9-x86_64\n"
     "(try to add '--skip-broken' to skip uninstallable packages or '--nobest' to use not only "
     "best candidate packages)\n",
     6,
     "Error:\n"
     "  Problem: conflicting requests\n"
     "  - nothing provides libnvidia-ml.so.1()(64bit) needed by "
     "nvidia-fabric-manager-3:550.90.07-1.x86_64 from cuda-rhel9-x86_64"},
    // Captured: the prelude's gpuctl_put into a full tmpfs.
    {"FullDisk", "",
     "cat: write error: No space left on device\n"
     "gpuctl: cannot write /etc/hosts\n",
     3,
     "cat: write error: No space left on device\n"
     "gpuctl: cannot write /etc/hosts"},
    {"KubeadmPreflight",
     "[init] Using Kubernetes version: v1.30.2\n"
     "[preflight] Running pre-flight checks\n",
     "\t[WARNING FileExisting-socat]: socat not found in system path\n"
     "error execution phase preflight: [preflight] Some fatal errors occurred:\n"
     "\t[ERROR NumCPU]: the number of available CPUs 1 is less than the required 2\n"
     "\t[ERROR Mem]: the system RAM (969 MB) is less than the minimum 1700 MB\n"
     "[preflight] If you know what you are doing, you can make a check non-fatal with "
     "`--ignore-preflight-errors=...`\n"
     "To see the stack trace of this error execute with --v=5 or higher\n",
     6,
     "error execution phase preflight: [preflight] Some fatal errors occurred:\n"
     "  [ERROR NumCPU]: the number of available CPUs 1 is less than the required 2\n"
     "  [ERROR Mem]: the system RAM (969 MB) is less than the minimum 1700 MB"},
    // Captured: curl 7.88 -fL of a missing key, with its progress meter
    // (redrawn with '\r'), then the prelude's own line.
    {"Curl22", "",
     "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
     "                                 Dload  Upload   Total   Spent    Left  Speed\n"
     "\r  0     0    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0\r  0  "
     " 335    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0\n"
     "curl: (22) The requested URL returned error: 404\n"
     "gpuctl: cannot download the key of repository cuda from "
     "https://mirror.example/cuda/3bf863cc.pub\n",
     3,
     "curl: (22) The requested URL returned error: 404\n"
     "gpuctl: cannot download the key of repository cuda from "
     "https://mirror.example/cuda/3bf863cc.pub"},
    {"SystemdJobFailed", "",
     "Job for kubelet.service failed because the control process exited with error code.\n"
     "See \"systemctl status kubelet.service\" and \"journalctl -xeu kubelet.service\" for "
     "details.\n",
     3, "Job for kubelet.service failed because the control process exited with error code."},
    {"AptMissingKey", "Hit:1 http://archive.ubuntu.com/ubuntu jammy InRelease\n",
     "W: GPG error: https://nvidia.github.io/libnvidia-container/stable/deb/amd64  InRelease: "
     "The following signatures couldn't be verified because the public key is not available: "
     "NO_PUBKEY DDCAE044F796ECB0\n"
     "E: The repository 'https://nvidia.github.io/libnvidia-container/stable/deb/amd64  "
     "InRelease' is not signed.\n",
     6,
     "W: GPG error: https://nvidia.github.io/libnvidia-container/stable/deb/amd64  InRelease: "
     "The following signatures couldn't be verified because the public key is not available: "
     "NO_PUBKEY DDCAE044F796ECB0\n"
     "E: The repository 'https://nvidia.github.io/libnvidia-container/stable/deb/amd64  "
     "InRelease' is not signed."},
    // Nothing recognised: the last lines of stderr, as before; stdout (what
    // went well) is left out while stderr said anything.
    {"NothingMatchesTheTailOfStderr", "configured 3 interfaces\nall done\n",
     "first\nsecond\n\nthird\nfourth\n", 3, "second\nthird\nfourth"},
    {"NothingMatchesShortStderrAlone", "configured 3 interfaces\nall done\n",
     "ib0 is down\n\nib1 is down\n", 3, "ib0 is down\nib1 is down"},
    {"NothingMatchesAndStderrIsEmptyTheTailOfStdout",
     "Reading package lists...\nchecking mounts\nmount /data missing\n", "", 2,
     "checking mounts\nmount /data missing"},
    // Noise only (its errno text is no cause): nothing to show.
    {"NoiseOnly", "",
     "debconf: delaying package configuration, since apt-utils is not installed\n"
     "dpkg-preconfigure: unable to re-open stdin: No such file or directory\n\n",
     6, ""},
    {"ZeroLines", "", "E: Unable to locate package nvidia-driver-550\n", 0, ""},
};

std::string Expand(std::string text) {
  const std::string open = "{fixture:";
  const auto at = text.find(open);
  if (at == std::string::npos) {
    return text;
  }
  const auto close = text.find("}\n", at);
  const std::string name = text.substr(at + open.size(), close - at - open.size());
  std::ifstream in(std::string(GPUCTL_FIXTURES_DIR) + "/" + name);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_FALSE(content.str().empty()) << name;
  return text.substr(0, at) + content.str() + text.substr(close + 2);
}

// gtest names the failing case rather than dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ExplainFailureTest : public ::testing::TestWithParam<Case> {};

TEST_P(ExplainFailureTest, PicksTheLinesThatSayWhy) {
  const Case& c = GetParam();
  EXPECT_EQ(ExplainFailure(Expand(c.out), Expand(c.err), c.max_lines), c.expected);
}

INSTANTIATE_TEST_SUITE_P(RealOutputs, ExplainFailureTest, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(ExplainFailureLimitsTest, ALongLineIsCutWithoutSplittingACharacter) {
  // 'é' is two bytes; the cut (room for "...") lands inside the first one,
  // which goes whole.
  const std::string x(kMaxExplainLineLength - 7, 'x');
  const std::string got = ExplainFailure("", "E: " + x + "ééé\n", 3);
  EXPECT_EQ(got, "E: " + x + "...");
  EXPECT_LE(got.size(), kMaxExplainLineLength);
}

TEST(ExplainFailureLimitsTest, NeverMoreThanMaxLines) {
  std::string err;
  for (int i = 0; i < 50; ++i) err += "E: failure number " + std::to_string(i) + "\n";
  const std::string got = ExplainFailure(err, err, 4);
  EXPECT_EQ(got,
            "E: failure number 0\nE: failure number 1\nE: failure number 2\n"
            "E: failure number 49");
}

}  // namespace
}  // namespace gpuctl
