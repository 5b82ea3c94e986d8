// JsonLine: objects written field by field parse back to what was written,
// whatever bytes the strings hold.
#include "gpuctl/util/json_line.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuctl {
namespace {

TEST(JsonLine, FieldsParseBackAsWritten) {
  const std::string line = JsonLine()
                               .Text("plain", "worker1")
                               .Text("quoted", "say \"hi\"\\ \t\n")
                               .Number("n", -42)
                               .Real("x", 2.5)
                               .Flag("yes", true)
                               .Raw("after", "[1,2]")
                               .Raw("env", JsonLine().Text("GPUCTL_A", "1").str())
                               .str();
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["plain"], "worker1");
  EXPECT_EQ(j["quoted"], "say \"hi\"\\ \t\n");
  EXPECT_EQ(j["n"], -42);
  EXPECT_EQ(j["x"], 2.5);
  EXPECT_EQ(j["yes"], true);
  EXPECT_EQ(j["after"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(j["env"]["GPUCTL_A"], "1");
}

TEST(JsonLine, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const auto j = nlohmann::json::parse(JsonLine()
                                           .Text("out",
                                                 "a\xff"
                                                 "b")
                                           .str());
  EXPECT_EQ(j["out"],
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(JsonLine().str(), "{}");
  EXPECT_EQ(JsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(nlohmann::json::parse(JsonQuote(std::string("nul\0here", 8))),
            std::string("nul\0here", 8));
}

TEST(JsonLine, TakeGivesTheLineAndStartsAnEmptyOne) {
  JsonLine line;
  line.Text("a", "1").Number("n", 7);
  const std::string text = line.str();
  EXPECT_EQ(text, R"({"a":"1","n":7})");
  EXPECT_EQ(line.Take(), text);
  EXPECT_EQ(line.str(), "{}");
  std::string appended = "x=";
  AppendJsonQuoted(appended, "say \"hi\"");
  EXPECT_EQ(appended, R"(x="say \"hi\"")");
}

}  // namespace
}  // namespace gpuctl
