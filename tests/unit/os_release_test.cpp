// os_release.h on the os-release files the distributions really ship
// (tests/fixtures/os-release/, README.md there says where each came from).
#include "gpuctl/model/os_release.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::ParseText;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GPUCTL_FIXTURES_DIR) + "/os-release/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

OsReleaseFile FixtureFile(const std::string& name) { return ParseOsReleaseFile(Fixture(name)); }

OsRelease Declared(const std::string& name) {
  auto os = ParseOs(name);
  EXPECT_TRUE(os) << name;
  return os.value_or(OsRelease::Auto());
}

// Every release gpuctl supports has a real file here named as the inventory
// names it, and each identifies as that name.
class SupportedRelease : public ::testing::TestWithParam<std::string> {};

TEST_P(SupportedRelease, IdentifiesAsItsInventoryName) {
  const IdentifiedOs identified = IdentifyOs(FixtureFile(GetParam()));
  ASSERT_TRUE(identified.os) << identified.error;
  EXPECT_EQ(identified.os->Name(), GetParam());
  EXPECT_EQ(identified.os->family, Declared(GetParam()).family);
}

TEST_P(SupportedRelease, MatchesItsOwnDeclarationAndResolvesAuto) {
  const OsReleaseFile file = FixtureFile(GetParam());
  const IdentifiedOs same = CheckNodeOs(Declared(GetParam()), file);
  ASSERT_TRUE(same.os) << same.error;
  EXPECT_EQ(same.os->Name(), GetParam());
  const IdentifiedOs automatic = CheckNodeOs(OsRelease::Auto(), file);
  ASSERT_TRUE(automatic.os) << automatic.error;
  EXPECT_EQ(automatic.os->Name(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SupportedRelease, ::testing::ValuesIn(KnownOsNames()),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-' || c == '.') c = '_';
                           }
                           return name;
                         });

TEST(OsReleaseFixtures, ReadTheFieldsAsShipped) {
  const OsReleaseFile rocky = FixtureFile("rocky-9");
  EXPECT_EQ(rocky.Get("ID"), "rocky");
  EXPECT_EQ(rocky.Get("VERSION_ID"), "9.3");
  EXPECT_EQ(rocky.Get("PRETTY_NAME"), "Rocky Linux 9.3 (Blue Onyx)");
  EXPECT_EQ(rocky.IdLike(), (std::vector<std::string>{"rhel", "centos", "fedora"}));
  // Unquoted values (Ubuntu writes ID=ubuntu) read the same as quoted ones.
  const OsReleaseFile ubuntu = FixtureFile("ubuntu-22.04");
  EXPECT_EQ(ubuntu.Get("ID"), "ubuntu");
  EXPECT_EQ(ubuntu.Get("VERSION_ID"), "22.04");
  EXPECT_EQ(ubuntu.Get("VERSION_CODENAME"), "jammy");
  // RHEL's file has a blank line in the middle, and a value after it.
  EXPECT_EQ(FixtureFile("rhel-8").Get("REDHAT_SUPPORT_PRODUCT_VERSION"), "8.10");
  EXPECT_EQ(FixtureFile("debian-12").Describe(), "debian 12 (Debian GNU/Linux 12 (bookworm))");
}

TEST(OsReleaseVersions, UbuntuComparesMajorMinorOthersTheMajor) {
  EXPECT_EQ(
      CheckNodeOs(Declared("rocky-9"), ParseOsReleaseFile("ID=rocky\nVERSION_ID=9.4\n")).os->Name(),
      "rocky-9");
  EXPECT_EQ(
      CheckNodeOs(Declared("ubuntu-22.04"), ParseOsReleaseFile("ID=ubuntu\nVERSION_ID=\"22.04\"\n"))
          .os->Name(),
      "ubuntu-22.04");
  EXPECT_FALSE(
      CheckNodeOs(Declared("ubuntu-22.04"), FixtureFile("ubuntu-24.04")).os);  // same family
  EXPECT_FALSE(CheckNodeOs(Declared("rocky-8"), FixtureFile("rocky-9")).os);
  EXPECT_FALSE(
      CheckNodeOs(Declared("rocky-9"), ParseOsReleaseFile("ID=rocky\nVERSION_ID=90\n")).os);
}

TEST(OsReleaseContradiction, NamesBothSidesAndWhatToWrite) {
  const IdentifiedOs checked = CheckNodeOs(Declared("rocky-9"), FixtureFile("debian-12"));
  EXPECT_FALSE(checked.os);
  EXPECT_EQ(checked.error,
            "the inventory says rocky-9 but /etc/os-release says debian 12 (Debian GNU/Linux 12 "
            "(bookworm)); if the node is right, write os: debian-12 (or os: auto)");
}

TEST(OsReleaseContradiction, IdLikeOnlyExplainsNeverAccepts) {
  // AlmaLinux says it is like rhel; a node declared rhel-9 still is not one.
  const IdentifiedOs checked = CheckNodeOs(Declared("rhel-9"), FixtureFile("almalinux-9"));
  EXPECT_FALSE(checked.os);
  EXPECT_EQ(checked.error,
            "the inventory says rhel-9 but /etc/os-release says almalinux 9.5 (AlmaLinux 9.5 "
            "(Teal Serval)), which is only like rhel; if the node is right, write os: "
            "almalinux-9 (or os: auto)");
  // CentOS Stream's ID is centos, like CentOS Linux: NAME tells them apart.
  EXPECT_FALSE(CheckNodeOs(Declared("centos-stream-9"), FixtureFile("centos-7")).os);
  EXPECT_EQ(IdentifyOs(FixtureFile("centos-stream-8")).os->Name(), "centos-stream-8");
}

TEST(OsReleaseEndOfLife, CentOs7IsRefusedWithItsSuccessor) {
  const IdentifiedOs identified = IdentifyOs(FixtureFile("centos-7"));
  EXPECT_FALSE(identified.os);
  EXPECT_EQ(identified.error,
            "/etc/os-release says centos 7 (CentOS Linux 7 (Core)): centos-7 is end of life "
            "(CentOS Linux 7 ended on 2024-06-30); move the node to rocky-9 or almalinux-9 (or "
            "rocky-8/almalinux-8), or centos-stream-9");
  const IdentifiedOs automatic = CheckNodeOs(OsRelease::Auto(), FixtureFile("centos-7"));
  EXPECT_EQ(automatic.error, "os: auto, but " + identified.error);
  const IdentifiedOs declared = CheckNodeOs(Declared("rocky-8"), FixtureFile("centos-7"));
  EXPECT_NE(declared.error.find("the inventory says rocky-8 but /etc/os-release says centos 7"),
            std::string::npos)
      << declared.error;
  EXPECT_NE(declared.error.find("end of life"), std::string::npos) << declared.error;
}

TEST(OsReleaseUnknown, NamesWhatTheNodeReportedAndWhatIsSupported) {
  const OsReleaseFile fedora = ParseOsReleaseFile(
      "NAME=\"Fedora Linux\"\nVERSION=\"40 (Server Edition)\"\nID=fedora\nVERSION_ID=40\n"
      "PRETTY_NAME=\"Fedora Linux 40 (Server Edition)\"\n");
  const IdentifiedOs automatic = CheckNodeOs(OsRelease::Auto(), fedora);
  EXPECT_FALSE(automatic.os);
  EXPECT_EQ(automatic.error.rfind("os: auto, but /etc/os-release says fedora 40 (Fedora Linux 40 "
                                  "(Server Edition)), which gpuctl does not support",
                                  0),
            0U)
      << automatic.error;
  EXPECT_NE(automatic.error.find("supported: ubuntu-20.04, "), std::string::npos);
  // A derivative's ID_LIKE is shown, not followed.
  const IdentifiedOs oracle = IdentifyOs(ParseOsReleaseFile(
      "NAME=\"Oracle Linux Server\"\nID=\"ol\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.3\"\n"));
  EXPECT_FALSE(oracle.os);
  EXPECT_NE(oracle.error.find("ol 9.3 (Oracle Linux Server) (ID_LIKE: fedora)"), std::string::npos)
      << oracle.error;
  // A supported ID at a release gpuctl has no steps for.
  EXPECT_FALSE(IdentifyOs(ParseOsReleaseFile("ID=debian\nVERSION_ID=11\n")).os);
  EXPECT_EQ(IdentifyOs(ParseOsReleaseFile("NAME=Linux\n")).error,
            "os-release sets no ID, so gpuctl cannot tell which OS the node runs");
}

TEST(OsReleaseFormat, QuotesEscapesCommentsAndBlankLines) {
  const OsReleaseFile file = ParseOsReleaseFile(
      "# a comment\n"
      "\n"
      "   # an indented comment\n"
      "PLAIN=value\n"
      "DOUBLE=\"two words\"\n"
      "SINGLE='it''s'\n"
      "LITERAL='no \\$escape here'\n"
      "ESCAPED=\"a \\\"quote\\\", a \\$dollar, a \\\\backslash, a \\`tick\\`\"\n"
      "KEPT=\"\\n stays\"\n"
      "BARE=back\\ slash\n"
      "EMPTY=\n"
      "TRAILING=word # a comment after the value\n"
      "CRLF=\"dos\"\r\n"
      "not an assignment\n"
      "1BAD=starts with a digit\n"
      "UNCLOSED=\"never ends\n"
      "PLAIN=again\n");
  EXPECT_EQ(file.Get("PLAIN"), "again");  // the last assignment wins
  EXPECT_EQ(file.Get("DOUBLE"), "two words");
  EXPECT_EQ(file.Get("SINGLE"), "its");  // adjacent quoted words join, as in sh
  EXPECT_EQ(file.Get("LITERAL"), "no \\$escape here");
  EXPECT_EQ(file.Get("ESCAPED"), "a \"quote\", a $dollar, a \\backslash, a `tick`");
  EXPECT_EQ(file.Get("KEPT"), "\\n stays");
  EXPECT_EQ(file.Get("BARE"), "back slash");
  EXPECT_EQ(file.Get("EMPTY"), "");
  EXPECT_EQ(file.values.count("EMPTY"), 1U);
  EXPECT_EQ(file.Get("TRAILING"), "word");
  EXPECT_EQ(file.Get("CRLF"), "dos");
  EXPECT_EQ(file.values.count("1BAD"), 0U);
  EXPECT_EQ(file.values.count("UNCLOSED"), 0U);
  EXPECT_EQ(file.values.size(), 10U);
}

TEST(OsReleaseFormat, NoFinalNewlineAndEmptyInput) {
  EXPECT_EQ(ParseOsReleaseFile("ID=rocky").Get("ID"), "rocky");
  EXPECT_TRUE(ParseOsReleaseFile("").values.empty());
  EXPECT_EQ(ParseOsReleaseFile("").Describe(), "no ID");
}

TEST(OsReleaseScript, ReadsEtcThenUsrLib) {
  EXPECT_EQ(OsReleaseScript(), "cat /etc/os-release 2>/dev/null || cat /usr/lib/os-release\n");
}

// The inventory side of the same rules.
std::string WithOs(const std::string& os_line) {
  return std::string("cluster: lab\nnodes:\n  - name: m1\n    address: 198.18.0.10\n") + os_line +
         "    roles: [master]\n";
}

TEST(InventoryOs, AutoAndLeavingItOutBothMeanAuto) {
  auto automatic = ParseText(WithOs("    os: auto\n"));
  ASSERT_TRUE(automatic.inventory) << automatic.diagnostics.Format();
  EXPECT_TRUE(automatic.inventory->nodes[0].os.IsAuto());
  EXPECT_EQ(automatic.inventory->nodes[0].os.Name(), "auto");
  auto omitted = ParseText(WithOs(""));
  ASSERT_TRUE(omitted.inventory) << omitted.diagnostics.Format();
  EXPECT_TRUE(omitted.inventory->nodes[0].os.IsAuto());
}

TEST(InventoryOs, AcceptsAlmaLinuxAndCentOsStream) {
  for (const char* name : {"almalinux-8", "almalinux-9", "centos-stream-8", "centos-stream-9"}) {
    auto parsed = ParseText(WithOs(std::string("    os: ") + name + "\n"));
    ASSERT_TRUE(parsed.inventory) << name << ": " << parsed.diagnostics.Format();
    EXPECT_EQ(parsed.inventory->nodes[0].os.Name(), name);
    EXPECT_EQ(parsed.inventory->nodes[0].os.family, OsFamily::kRhel) << name;
  }
}

TEST(InventoryOs, EndOfLifeCentOsIsAnErrorThatNamesTheSuccessor) {
  auto eight = ParseText(WithOs("    os: centos-8\n"));
  EXPECT_FALSE(eight.inventory);
  EXPECT_TRUE(HasDiagnostic(eight.diagnostics, 5, 9,
                            "centos-8 is end of life (CentOS Linux 8 ended on 2021-12-31); its "
                            "successors are rocky-8 or almalinux-8"));
  auto seven = ParseText(WithOs("    os: centos-7\n"));
  EXPECT_FALSE(seven.inventory);
  EXPECT_TRUE(HasDiagnostic(seven.diagnostics, 5, 9, "centos-7 is end of life"));
  EXPECT_TRUE(HasDiagnostic(seven.diagnostics, 5, 9, "centos-stream-9"));
}

TEST(InventoryOs, AnUnknownNameListsAutoAmongTheChoices) {
  auto parsed = ParseText(WithOs("    os: slackware-15\n"));
  EXPECT_FALSE(parsed.inventory);
  EXPECT_TRUE(HasDiagnostic(parsed.diagnostics, 5, 9, "unknown OS 'slackware-15'"));
  EXPECT_TRUE(HasDiagnostic(parsed.diagnostics, 5, 9, "auto"));
}

}  // namespace
}  // namespace gpuctl
