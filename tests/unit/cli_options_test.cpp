// Global options (--only, --playbooks, -v, -o) work before or after the
// subcommand, as README's own examples write them.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuctl {
namespace {

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun Gpuctl(const std::string& args, const std::string& env = "") {
  CliRun run;
  FILE* pipe = popen((env + GPUCTL_BINARY + " " + args + " 2>&1").c_str(), "r");
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    run.out += buffer;
  }
  run.status = WEXITSTATUS(pclose(pipe));
  return run;
}

const std::string kCliOptionsInventory = std::string(GPUCTL_SOURCE_DIR) + "/inventories/mixed.yaml";

TEST(CliOptions, OnlyAfterTheSubcommandMeansWhatItMeansBefore) {
  const CliRun before = Gpuctl("--only k8s validate " + kCliOptionsInventory);
  const CliRun after = Gpuctl("validate --only k8s " + kCliOptionsInventory);
  const CliRun last = Gpuctl("validate " + kCliOptionsInventory + " --only k8s");
  ASSERT_EQ(before.status, 0) << before.out;
  EXPECT_EQ(after.status, 0) << after.out;
  EXPECT_EQ(after.out, before.out);
  EXPECT_EQ(last.out, before.out);
  // And it did narrow the catalog: all steps is more.
  EXPECT_NE(Gpuctl("validate " + kCliOptionsInventory).out, before.out);
}

TEST(CliOptions, RepeatedAndCommaSeparatedOnlyAgree) {
  const CliRun repeated = Gpuctl("validate --only k8s --only gpu " + kCliOptionsInventory);
  const CliRun commas = Gpuctl("validate --only k8s,gpu " + kCliOptionsInventory);
  EXPECT_EQ(repeated.status, 0) << repeated.out;
  EXPECT_EQ(repeated.out, commas.out);
}

TEST(CliOptions, PlaybooksAfterTheSubcommand) {
  const CliRun run =
      Gpuctl("validate " + kCliOptionsInventory + " --playbooks " + GPUCTL_PLAYBOOK_DIR);
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(CliOptions, AnyNonEmptyNoColorIsAccepted) {
  const CliRun plain = Gpuctl("validate " + kCliOptionsInventory);
  for (const char* value : {"1", "true", "anything at all"}) {
    const CliRun run =
        Gpuctl("validate " + kCliOptionsInventory, std::string("NO_COLOR='") + value + "' ");
    EXPECT_EQ(run.status, 0) << value << ": " << run.out;
    EXPECT_EQ(run.out, plain.out) << value;
  }
}

TEST(CliOptions, AMistypedCommandIsNamedWithTheOneMeant) {
  const CliRun run = Gpuctl("pln " + kCliOptionsInventory);
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("unknown command 'pln' (did you mean 'plan'?)"), std::string::npos)
      << run.out;
  const CliRun far = Gpuctl("--only k8s zzz " + kCliOptionsInventory);
  EXPECT_NE(far.out.find("unknown command 'zzz'; commands: validate, plan"), std::string::npos)
      << far.out;
}

TEST(CliOptions, LabHandsEveryArgumentToTheLabScript) {
  // Not to gpuctl's global options: `--name` is the lab script's.
  const CliRun run = Gpuctl("lab --name gpuctl-no-such-lab status");
  EXPECT_NE(run.out.find("no lab 'gpuctl-no-such-lab'"), std::string::npos) << run.out;
}

TEST(CliOptions, AnUnknownOptionIsStillRefused) {
  const CliRun run = Gpuctl("validate --bogus " + kCliOptionsInventory);
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.out.find("--bogus"), std::string::npos) << run.out;
}

TEST(CliOptions, AMistypedOptionNamesTheOneMeant) {
  const CliRun plan = Gpuctl("plan --hide-okk " + kCliOptionsInventory);
  EXPECT_EQ(plan.status, 1);
  EXPECT_NE(plan.out.find("gpuctl plan: unknown option '--hide-okk' (did you mean '--hide-ok'?)"),
            std::string::npos)
      << plan.out;
  // A global option mistyped after the subcommand is found among them too.
  const CliRun only = Gpuctl("validate --onlyy k8s " + kCliOptionsInventory);
  EXPECT_EQ(only.status, 1);
  EXPECT_NE(only.out.find("unknown option '--onlyy' (did you mean '--only'?)"), std::string::npos)
      << only.out;
  // Nothing close: no guess, but where to look.
  const CliRun far = Gpuctl("check --zzz " + kCliOptionsInventory);
  EXPECT_EQ(far.status, 1);
  EXPECT_NE(far.out.find("unknown option '--zzz'\nRun gpuctl check --help"), std::string::npos)
      << far.out;
}

TEST(CliOptions, ValidateSpeaksJsonWithItsFormatAndEachDiagnostic) {
  const CliRun good = Gpuctl("validate -o json " + kCliOptionsInventory);
  EXPECT_EQ(good.status, 0) << good.out;
  EXPECT_NE(good.out.find("\"format\": \"gpuctl.validate/v1\""), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("\"valid\": true"), std::string::npos) << good.out;
  const CliRun bad = Gpuctl("-o json validate /dev/null");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("\"valid\": false"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("\"message\": \"not a regular file (a character device)\""),
            std::string::npos)
      << bad.out;
}

TEST(CliOptions, ValidateRefusesAnIdentityFileThatIsNotThere) {
  const std::string dir = ::testing::TempDir();
  const auto with_key = [&](const std::string& name, const std::string& key) {
    std::ifstream in(kCliOptionsInventory);
    std::stringstream read;
    read << in.rdbuf();
    std::string text = read.str();
    // mixed.yaml has an ssh block: the key goes first in it.
    const auto at = text.find("\nssh:\n");
    text.insert(at + 6, "  identity_file: " + key + "\n");
    const std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
  };
  const CliRun missing = Gpuctl("validate " + with_key("missing-key.yaml", "/nonexistent/id_x"));
  EXPECT_EQ(missing.status, 1) << missing.out;
  EXPECT_NE(missing.out.find("error: ssh.identity_file /nonexistent/id_x"), std::string::npos)
      << missing.out;
  EXPECT_NE(missing.out.find("no such file"), std::string::npos) << missing.out;
  // Any readable file passes (validate does not parse the key).
  const CliRun present = Gpuctl("validate " + with_key("present-key.yaml", kCliOptionsInventory));
  EXPECT_EQ(present.status, 0) << present.out;
}

}  // namespace
}  // namespace gpuctl
