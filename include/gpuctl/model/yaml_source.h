// Reading YAML against a fixed schema, with diagnostics that point at the
// offending text (file:line:column, 1-based).
//
// Shared by every loader (inventory, catalog, saved plan) so their messages
// read alike: "unknown key 'adress' (did you mean 'address'?)", "expected an
// integer, got 'abc'", "missing required key 'cluster'". Readers never stop at
// the first problem: each records a diagnostic and hands back nullopt, and the
// loader carries on so `gpuctl validate` shows everything at once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpuctl/model/diagnostic.h"
#include "gpuctl/util/text.h"

namespace gpuctl::yaml {

// A whole file, through the bounded reader (input_file.h): one that is not a
// regular file, is larger than `max_bytes` or cannot be read is a diagnostic
// naming why.
std::optional<std::string> ReadFile(const std::string& path, std::uint64_t max_bytes,
                                    Diagnostics& diagnostics);

// yaml-cpp marks are 0-based and -1 when unknown; ours are 1-based and 0.
SourceLocation Where(const YAML::Mark& mark, const std::string& file);

// Levenshtein distance, for "did you mean" hints.
std::size_t EditDistance(std::string_view a, std::string_view b);
// " (did you mean 'x'?)" naming the closest candidate when it is close enough
// to be a likely typo, else "".
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);
// "unknown role 'wroker' (did you mean 'worker'?)" when one is close, else
// "unknown role 'x'; known: master, worker, storage".
std::string UnknownName(std::string_view what, std::string_view name,
                        const std::vector<std::string>& known);

// Appends `from` to `to` ordered by file position (stable), so a reader's
// schema pass and its cross-key checks print as one top-to-bottom list.
void AppendInOrder(Diagnostics& to, const Diagnostics& from);

// How a value reads in a message: "'abc'", "a list", "a mapping", "nothing".
std::string Describe(const YAML::Node& node);

// A scalar with where it was written.
struct Scalar {
  std::string text;
  SourceLocation where;
};

// How many values (scalars, lists, mappings, nulls, aliases) `text` can hold
// at most, read without parsing it: each value after the first is set apart
// from the one before by a byte that is not a letter or digit (an indicator
// such as "-", ":", ",", "[", "{", "*", a quote, a line break) or by a run of
// blanks, and one such separator brings at most three values ("{:}" is a
// mapping, a null key and its null value). Source::Parse counts values in a
// parse of their own only where this bound passes kMaxYamlValues.
std::size_t YamlValueBound(std::string_view text);

// One YAML file being read: its name for messages and where problems go.
class Source {
 public:
  // Explains an unknown key better than a spelling hint can (e.g. an inline
  // secret); gets the key and the keys allowed there; nullopt: no advice.
  using KeyAdvisor = std::function<std::optional<std::string>(
      const std::string& key, const std::vector<std::string>& allowed)>;

  Source(std::string file, Diagnostics& diagnostics)
      : file_(std::move(file)), diagnostics_(diagnostics) {}

  // Parses `text`. A syntax error becomes one diagnostic at its position; so
  // does a text of more than kMaxYamlValues values (input_file.h), at the
  // value past the bound, before any tree is built (a first parse counts
  // them, where the text's size and YamlValueBound leave it possible).
  std::optional<YAML::Node> Parse(const std::string& text);

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] SourceLocation Where(const YAML::Node& node) const;
  void Error(const SourceLocation& where, std::string message);
  void Warning(const SourceLocation& where, std::string message);
  [[nodiscard]] Diagnostics& diagnostics() { return diagnostics_; }

  void SetKeyAdvisor(KeyAdvisor advisor) { advisor_ = std::move(advisor); }
  [[nodiscard]] const KeyAdvisor& key_advisor() const { return advisor_; }

  // Conversions of one value found at `where`. Each reports a wrong type and
  // returns nullopt. Null lists and mappings read as empty: "ssh:" with
  // nothing under it is harmless, and saying so would only be noise.
  std::optional<Scalar> AsString(const YAML::Node& node, const SourceLocation& where);
  std::optional<int> AsInt(const YAML::Node& node, const SourceLocation& where, int min, int max);
  std::optional<bool> AsBool(const YAML::Node& node, const SourceLocation& where);
  std::optional<std::vector<YAML::Node>> AsList(const YAML::Node& node,
                                                const SourceLocation& where);
  std::optional<std::vector<Scalar>> AsStringList(const YAML::Node& node,
                                                  const SourceLocation& where);

 private:
  std::string file_;
  Diagnostics& diagnostics_;
  KeyAdvisor advisor_;
};

// One mapping read against the keys its schema allows. Construction reports
// a value that is not a mapping, duplicate keys and unknown keys (with a
// hint), so a loader cannot forget to; getters then read known keys.
class MapReader {
 public:
  MapReader(Source& source, const YAML::Node& node, std::vector<std::string> allowed);
  // The same at a location chosen by the caller (a null value's own mark
  // points past it, so callers pass the key's location instead).
  MapReader(Source& source, const YAML::Node& node, const SourceLocation& where,
            std::vector<std::string> allowed);

  // False when the value was not a mapping (already reported).
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] const SourceLocation& where() const { return where_; }
  [[nodiscard]] bool Has(std::string_view key) const;
  // Reports each of `keys` that is absent; false if any was.
  bool Require(std::initializer_list<std::string_view> keys);

  // The raw value of `key`, and where it is (a null value: where its key is).
  [[nodiscard]] std::optional<YAML::Node> Value(std::string_view key) const;
  [[nodiscard]] SourceLocation ValueWhere(std::string_view key) const;
  [[nodiscard]] SourceLocation KeyWhere(std::string_view key) const;

  // Typed getters: nullopt when absent or wrong (wrong is reported).
  std::optional<Scalar> String(std::string_view key);
  std::optional<int> Int(std::string_view key, int min, int max);
  std::optional<bool> Bool(std::string_view key);
  std::optional<std::vector<YAML::Node>> List(std::string_view key);
  std::optional<std::vector<Scalar>> StringList(std::string_view key);
  std::optional<MapReader> Map(std::string_view key, std::vector<std::string> allowed);

  // Assign-if-present shorthands for optional keys with defaults.
  void Read(std::string_view key, std::string& out);
  void Read(std::string_view key, int& out, int min, int max);
  void Read(std::string_view key, bool& out);

 private:
  struct Entry {
    std::string key;
    YAML::Node value;
    SourceLocation key_where;
    SourceLocation value_where;
  };
  const Entry* Find(std::string_view key) const;
  void Index(const YAML::Node& node);

  Source* source_;
  SourceLocation where_;
  std::vector<std::string> allowed_;
  std::vector<Entry> entries_;
  bool ok_ = true;
};

}  // namespace gpuctl::yaml
