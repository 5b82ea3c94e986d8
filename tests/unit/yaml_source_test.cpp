#include "gpuctl/model/yaml_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "gpuctl/util/input_file.h"

namespace gpuctl::yaml {
namespace {

using ::testing::HasSubstr;

// Parses `text` as f.yaml and reads its top mapping against `keys`.
struct Fixture {
  Diagnostics diagnostics;
  Source source{"f.yaml", diagnostics};
  YAML::Node root;

  explicit Fixture(const std::string& text) { root = source.Parse(text).value_or(YAML::Node()); }
  MapReader Top(std::vector<std::string> keys) { return MapReader(source, root, std::move(keys)); }
  std::string Only() {
    EXPECT_EQ(diagnostics.All().size(), 1U) << diagnostics.Format();
    return diagnostics.All().empty() ? "" : diagnostics.All().front().Format();
  }
};

// Values in a tree as the parser made them: each node, each key, each item.
std::size_t Values(const YAML::Node& node) {
  std::size_t count = 1;
  if (node.IsSequence()) {
    for (const auto& item : node) {
      count += Values(item);
    }
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      count += Values(entry.first) + Values(entry.second);
    }
  }
  return count;
}

TEST(YamlValueBound, IsAtLeastTheValuesOfDenseTexts) {
  // The densest ways to write values: flow collections of nulls and of
  // empty collections, block sequences of nulls, null keys and values.
  for (const std::string text : {"[:,:,:,:]", "{:,:,:}", "[[],[],{},{}]", "- \n- \n-\n-",
                                 "{? , ? }", "a:\nb:\nc:", "[a,b,c,d,e,f]", "- - - - x",
                                 "{a: {b: {c: [d, e]}}}", "x", "", "[ , ]", "'a': \"b\""}) {
    const YAML::Node tree = YAML::Load(text);
    EXPECT_GE(YamlValueBound(text), Values(tree)) << text;
  }
}

TEST(YamlValueBound, LetsAGeneratedInventoryOfTenThousandNodesSkipTheCount) {
  // Indentation is one separator a line, not one a blank: an inventory of
  // 10,000 nodes at 155 bytes each is bounded well under the cap, so it is
  // parsed once; a dense list of the same size is not.
  std::string inventory = "nodes:\n";
  std::string dense = "nodes: [";
  for (int i = 0; i < 10000; ++i) {
    inventory += fmt::format(
        "  - name: gpu{:07}\n    address: 10.0.{}.{}\n    os: ubuntu-22.04\n    roles: [worker]\n"
        "    hardware:\n      gpus: {{model: \"NVIDIA H100 80GB HBM3\", count: 8}}\n",
        i, i / 256, i % 256);
  }
  for (std::size_t i = 0; i < kMaxYamlValues / 2; ++i) {
    dense += "a,";
  }
  dense += "]\n";
  EXPECT_GT(inventory.size(), kCountYamlValuesAbove);
  EXPECT_LT(YamlValueBound(inventory), kMaxYamlValues);
  EXPECT_GT(YamlValueBound(dense), kMaxYamlValues);
}

TEST(YamlWhere, ConvertsZeroBasedMarksToOneBased) {
  YAML::Mark mark;
  mark.line = 4;
  mark.column = 2;
  const SourceLocation where = Where(mark, "x.yaml");
  EXPECT_EQ(where.line, 5);
  EXPECT_EQ(where.column, 3);
  EXPECT_EQ(Where(YAML::Mark::null_mark(), "x.yaml").line, 0);
}

TEST(YamlSource, SyntaxErrorHasItsPosition) {
  Fixture f("a: [1, 2\nb: 3\n");
  EXPECT_EQ(f.Only(), "f.yaml:2:2: error: invalid YAML: end of sequence flow not found");
}

TEST(YamlSource, UnknownKeyGetsSuggestion) {
  Fixture f("name: a\nadress: b\n");
  f.Top({"name", "address"});
  EXPECT_EQ(f.Only(), "f.yaml:2:1: error: unknown key 'adress' (did you mean 'address'?)");
}

TEST(YamlSource, UnknownKeyWithNothingCloseListsAllowedKeys) {
  Fixture f("zzz: 1\n");
  f.Top({"name", "address"});
  EXPECT_EQ(f.Only(), "f.yaml:1:1: error: unknown key 'zzz' (expected one of: name, address)");
}

TEST(YamlSource, KeyAdvisorReplacesTheHint) {
  Fixture f("token: x\n");
  f.source.SetKeyAdvisor([](const std::string& key, const std::vector<std::string>&) {
    return std::optional<std::string>("no " + key + " here");
  });
  f.Top({"name"});
  EXPECT_EQ(f.Only(), "f.yaml:1:1: error: no token here");
}

TEST(YamlSource, DuplicateKeyNamesTheFirst) {
  Fixture f("a: 1\nb: 2\na: 3\n");
  auto m = f.Top({"a", "b"});
  EXPECT_EQ(f.Only(), "f.yaml:3:1: error: duplicate key 'a' (first at line 1)");
  EXPECT_EQ(m.Int("a", 0, 9), 1);
}

TEST(YamlSource, WrongTypesSayWhatWasExpected) {
  Fixture f("n: abc\nl: x\nm: [1]\nb: maybe\ns: {a: 1}\nr: 70000\n");
  auto m = f.Top({"n", "l", "m", "b", "s", "r"});
  EXPECT_FALSE(m.Int("n", 0, 10));
  EXPECT_FALSE(m.List("l"));
  EXPECT_FALSE(m.Map("m", {}));
  EXPECT_FALSE(m.Bool("b"));
  EXPECT_FALSE(m.String("s"));
  EXPECT_FALSE(m.Int("r", 1, 65535));
  EXPECT_EQ(f.diagnostics.Format(),
            "f.yaml:1:4: error: expected an integer, got 'abc'\n"
            "f.yaml:2:4: error: expected a list, got 'x'\n"
            "f.yaml:3:4: error: expected a mapping, got a list\n"
            "f.yaml:4:4: error: expected true or false, got 'maybe'\n"
            "f.yaml:5:4: error: expected a string, got a mapping\n"
            "f.yaml:6:4: error: 70000 is out of range: expected 1 to 65535\n");
}

TEST(YamlSource, NullValueIsReportedAtItsKey) {
  Fixture f("a:\nb: 1\n");
  auto m = f.Top({"a", "b"});
  EXPECT_FALSE(m.String("a"));
  EXPECT_EQ(f.Only(), "f.yaml:1:1: error: expected a string, got nothing");
}

TEST(YamlSource, NullListsAndMappingsReadAsEmpty) {
  Fixture f("l:\nm:\n");
  auto m = f.Top({"l", "m"});
  EXPECT_EQ(m.List("l")->size(), 0U);
  EXPECT_TRUE(m.Map("m", {"x"}));
  EXPECT_TRUE(f.diagnostics.All().empty());
}

TEST(YamlSource, RequireReportsEachMissingKeyAtTheMapping) {
  Fixture f("x:\n  a: 1\n");
  auto top = f.Top({"x"});
  auto x = top.Map("x", {"a", "b", "c"});
  ASSERT_TRUE(x);
  EXPECT_FALSE(x->Require({"a", "b", "c"}));
  EXPECT_EQ(f.diagnostics.Format(),
            "f.yaml:2:3: error: missing required key 'b'\n"
            "f.yaml:2:3: error: missing required key 'c'\n");
}

TEST(YamlSource, ReadsTypedValues) {
  Fixture f("s: text\ni: 42\nb: yes\nl: [x, y]\n");
  auto m = f.Top({"s", "i", "b", "l"});
  EXPECT_EQ(m.String("s")->text, "text");
  EXPECT_EQ(m.String("s")->where.line, 1);
  EXPECT_EQ(m.Int("i", 0, 100), 42);
  EXPECT_EQ(m.Bool("b"), true);
  auto l = m.StringList("l");
  ASSERT_TRUE(l);
  ASSERT_EQ(l->size(), 2U);
  EXPECT_EQ((*l)[1].text, "y");
  EXPECT_EQ((*l)[1].where.column, 8);
  std::string absent = "kept";
  m.Read("missing", absent);
  EXPECT_EQ(absent, "kept");
  EXPECT_TRUE(f.diagnostics.All().empty());
}

TEST(YamlSource, StringListReportsEachBadItem) {
  Fixture f("l: [a, [b], c, {d: 1}]\n");
  EXPECT_FALSE(f.Top({"l"}).StringList("l"));
  EXPECT_EQ(f.diagnostics.ErrorCount(), 2U);
  EXPECT_THAT(f.diagnostics.Format(),
              HasSubstr("f.yaml:1:8: error: expected a string, got a list"));
}

TEST(YamlSource, TopLevelThatIsNotAMapping) {
  Fixture f("- a\n- b\n");
  EXPECT_FALSE(f.Top({"a"}).ok());
  EXPECT_EQ(f.Only(), "f.yaml:1:1: error: expected a mapping, got a list");
}

TEST(DidYouMean, SuggestsOnlyCloseNames) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3U);
  EXPECT_EQ(DidYouMean("adress", {"name", "address"}), " (did you mean 'address'?)");
  EXPECT_EQ(DidYouMean("os", {"ib"}), "");
  EXPECT_EQ(DidYouMean("completely", {"different"}), "");
  EXPECT_EQ(UnknownName("role", "x", {"a", "b"}), "unknown role 'x'; known: a, b");
}

TEST(AppendInOrder, SortsByPositionAndKeepsSeverity) {
  Diagnostics from;
  from.Error({"f", 3, 1}, "c");
  from.Warning({"f", 1, 5}, "a");
  from.Error({"f", 3, 1}, "d");
  Diagnostics to;
  AppendInOrder(to, from);
  EXPECT_EQ(to.Format(), "f:1:5: warning: a\nf:3:1: error: c\nf:3:1: error: d\n");
}

}  // namespace
}  // namespace gpuctl::yaml
