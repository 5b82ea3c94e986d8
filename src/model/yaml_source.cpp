#include "gpuctl/model/yaml_source.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include "gpuctl/util/input_file.h"

namespace gpuctl::yaml {

std::optional<std::string> ReadFile(const std::string& path, std::uint64_t max_bytes,
                                    Diagnostics& diagnostics) {
  std::string why;
  auto text = ReadInputFile(path, max_bytes, why);
  if (!text) {
    diagnostics.Error({path, 0, 0}, std::move(why));
  }
  return text;
}

SourceLocation Where(const YAML::Mark& mark, const std::string& file) {
  if (mark.line < 0 || mark.column < 0) {
    return {file, 0, 0};
  }
  return {file, mark.line + 1, mark.column + 1};
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  // A third of the word, at least 1 and at most 3: "adress" finds "address",
  // but "os" does not turn into "ib".
  const std::size_t limit = std::clamp<std::size_t>(word.size() / 3, 1, 3);
  const std::string* best = nullptr;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    const std::size_t d = EditDistance(word, candidate);
    // Never a suggestion that shares nothing with the word ("x" for "a").
    if (d < best_distance && d < word.size()) {
      best = &candidate;
      best_distance = d;
    }
  }
  return best != nullptr ? fmt::format(" (did you mean '{}'?)", *best) : std::string();
}

std::string UnknownName(std::string_view what, std::string_view name,
                        const std::vector<std::string>& known) {
  const std::string hint = DidYouMean(name, known);
  return hint.empty() ? fmt::format("unknown {} '{}'; known: {}", what, name, Join(known))
                      : fmt::format("unknown {} '{}'{}", what, name, hint);
}

void AppendInOrder(Diagnostics& to, const Diagnostics& from) {
  std::vector<Diagnostic> items = from.All();
  std::stable_sort(items.begin(), items.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.where.file, a.where.line, a.where.column) <
           std::tie(b.where.file, b.where.line, b.where.column);
  });
  for (auto& d : items) {
    if (d.severity == Severity::kError) {
      to.Error(std::move(d.where), std::move(d.message));
    } else {
      to.Warning(std::move(d.where), std::move(d.message));
    }
  }
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar: {
      constexpr std::size_t kMax = 40;
      const std::string& text = node.Scalar();
      return text.size() > kMax ? fmt::format("'{}...'", text.substr(0, kMax))
                                : fmt::format("'{}'", text);
    }
    default:
      return "nothing";
  }
}

namespace {

// Counts values as the parser meets them, without building a tree, and stops
// the parse (by throwing) at the first one past the bound.
class ValueCounter : public YAML::EventHandler {
 public:
  struct TooMany {
    YAML::Mark mark;
  };

  explicit ValueCounter(std::size_t limit) : limit_(limit) {}

  void OnDocumentStart(const YAML::Mark& /*mark*/) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t /*anchor*/) override { Count(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t /*anchor*/) override { Count(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                const std::string& /*value*/) override {
    Count(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/,
                       YAML::anchor_t /*anchor*/, YAML::EmitterStyle::value /*style*/) override {
    Count(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                  YAML::EmitterStyle::value /*style*/) override {
    Count(mark);
  }
  void OnMapEnd() override {}

 private:
  void Count(const YAML::Mark& mark) {
    if (++count_ > limit_) {
      throw TooMany{mark};
    }
  }
  std::size_t limit_;
  std::size_t count_ = 0;
};

}  // namespace

std::size_t YamlValueBound(std::string_view text) {
  std::size_t separators = 0;
  bool in_blanks = false;
  for (const char c : text) {
    if (c == ' ' || c == '\t') {
      separators += in_blanks ? 0 : 1;
      in_blanks = true;
      continue;
    }
    in_blanks = false;
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) {
      ++separators;
    }
  }
  return 3 * separators + 3;
}

std::optional<YAML::Node> Source::Parse(const std::string& text) {
  try {
    // yaml-cpp's tree costs about 500 bytes a value, so a small file written
    // densely could take gigabytes; count first where that is possible. The
    // count is a parse of its own (0.25 s of a 10,000-node inventory's
    // 0.6 s), so a text whose separators cannot make that many values skips
    // it. A syntax error met while counting is left for the real parse.
    if (text.size() > kCountYamlValuesAbove && YamlValueBound(text) > kMaxYamlValues) {
      std::istringstream in(text);
      YAML::Parser parser(in);
      ValueCounter counter(kMaxYamlValues);
      try {
        parser.HandleNextDocument(counter);
      } catch (const ValueCounter::TooMany& too_many) {
        Error(yaml::Where(too_many.mark, file_),
              fmt::format("more than {} YAML values (scalars, lists and mappings) in one file; "
                          "gpuctl reads at most that many",
                          kMaxYamlValues));
        return std::nullopt;
      } catch (const YAML::Exception&) {
        // The same error comes again from the parse below, which reports it.
      }
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Error(yaml::Where(e.mark, file_), fmt::format("invalid YAML: {}", e.msg));
    return std::nullopt;
  }
}

SourceLocation Source::Where(const YAML::Node& node) const {
  if (!node.IsDefined()) {
    return {file_, 0, 0};
  }
  return yaml::Where(node.Mark(), file_);
}

namespace {

// A last guard for messages that quote what the file says (an unknown key or
// name): a control character in them is written as an escape, never raw, so
// a hostile value cannot add a line to `validate`'s output or move a
// terminal's cursor. The value checks (value_kinds.h) describe such
// characters in words before it comes to this.
std::string Printable(std::string message) {
  std::string out;
  out.reserve(message.size());
  for (char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void Source::Error(const SourceLocation& where, std::string message) {
  diagnostics_.Error(where, Printable(std::move(message)));
}

void Source::Warning(const SourceLocation& where, std::string message) {
  diagnostics_.Warning(where, Printable(std::move(message)));
}

std::optional<Scalar> Source::AsString(const YAML::Node& node, const SourceLocation& where) {
  if (!node.IsScalar()) {
    Error(where, fmt::format("expected a string, got {}", Describe(node)));
    return std::nullopt;
  }
  return Scalar{node.Scalar(), where};
}

std::optional<int> Source::AsInt(const YAML::Node& node, const SourceLocation& where, int min,
                                 int max) {
  if (!node.IsScalar()) {
    Error(where, fmt::format("expected an integer, got {}", Describe(node)));
    return std::nullopt;
  }
  const std::string& text = node.Scalar();
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end) {
    Error(where, fmt::format("expected an integer, got {}", Describe(node)));
    return std::nullopt;
  }
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    Error(where, fmt::format("{} is out of range: expected {} to {}", text, min, max));
    return std::nullopt;
  }
  return static_cast<int>(value);
}

std::optional<bool> Source::AsBool(const YAML::Node& node, const SourceLocation& where) {
  if (node.IsScalar()) {
    std::string text = node.Scalar();
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // The spellings yaml-cpp itself accepts, so `become: yes` keeps working.
    if (text == "true" || text == "yes" || text == "on") {
      return true;
    }
    if (text == "false" || text == "no" || text == "off") {
      return false;
    }
  }
  Error(where, fmt::format("expected true or false, got {}", Describe(node)));
  return std::nullopt;
}

std::optional<std::vector<YAML::Node>> Source::AsList(const YAML::Node& node,
                                                      const SourceLocation& where) {
  if (node.IsNull()) {
    return std::vector<YAML::Node>{};
  }
  if (!node.IsSequence()) {
    Error(where, fmt::format("expected a list, got {}", Describe(node)));
    return std::nullopt;
  }
  return std::vector<YAML::Node>(node.begin(), node.end());
}

std::optional<std::vector<Scalar>> Source::AsStringList(const YAML::Node& node,
                                                        const SourceLocation& where) {
  auto items = AsList(node, where);
  if (!items) {
    return std::nullopt;
  }
  std::vector<Scalar> out;
  bool ok = true;
  for (const auto& item : *items) {
    if (auto s = AsString(item, Where(item))) {
      out.push_back(std::move(*s));
    } else {
      ok = false;
    }
  }
  return ok ? std::optional(std::move(out)) : std::nullopt;
}

MapReader::MapReader(Source& source, const YAML::Node& node, std::vector<std::string> allowed)
    : MapReader(source, node, source.Where(node), std::move(allowed)) {}

MapReader::MapReader(Source& source, const YAML::Node& node, const SourceLocation& where,
                     std::vector<std::string> allowed)
    : source_(&source), where_(where), allowed_(std::move(allowed)) {
  if (node.IsNull()) {
    return;
  }
  if (!node.IsMap()) {
    source.Error(where_, fmt::format("expected a mapping, got {}", Describe(node)));
    ok_ = false;
    return;
  }
  Index(node);
}

void MapReader::Index(const YAML::Node& node) {
  for (const auto& pair : node) {
    const SourceLocation key_where = source_->Where(pair.first);
    if (!pair.first.IsScalar()) {
      source_->Error(key_where, fmt::format("expected a key, got {}", Describe(pair.first)));
      continue;
    }
    const std::string& key = pair.first.Scalar();
    if (const Entry* first = Find(key)) {
      source_->Error(key_where, fmt::format("duplicate key '{}' (first at line {})", key,
                                            first->key_where.line));
      continue;
    }
    if (std::find(allowed_.begin(), allowed_.end(), key) == allowed_.end()) {
      std::optional<std::string> advice;
      if (source_->key_advisor()) {
        advice = source_->key_advisor()(key, allowed_);
      }
      if (!advice) {
        const std::string hint = DidYouMean(key, allowed_);
        advice = hint.empty()
                     ? fmt::format("unknown key '{}' (expected one of: {})", key, Join(allowed_))
                     : fmt::format("unknown key '{}'{}", key, hint);
      }
      source_->Error(key_where, std::move(*advice));
      continue;
    }
    // A null value's mark is the next token, often on a later line.
    const SourceLocation value_where =
        pair.second.IsNull() ? key_where : source_->Where(pair.second);
    entries_.push_back({key, pair.second, key_where, value_where});
  }
}

const MapReader::Entry* MapReader::Find(std::string_view key) const {
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  return it == entries_.end() ? nullptr : &*it;
}

bool MapReader::Has(std::string_view key) const { return Find(key) != nullptr; }

bool MapReader::Require(std::initializer_list<std::string_view> keys) {
  bool ok = true;
  for (auto key : keys) {
    if (ok_ && !Has(key)) {
      source_->Error(where_, fmt::format("missing required key '{}'", key));
      ok = false;
    }
  }
  return ok && ok_;
}

std::optional<YAML::Node> MapReader::Value(std::string_view key) const {
  const Entry* e = Find(key);
  return e != nullptr ? std::optional(e->value) : std::nullopt;
}

SourceLocation MapReader::ValueWhere(std::string_view key) const {
  const Entry* e = Find(key);
  return e != nullptr ? e->value_where : where_;
}

SourceLocation MapReader::KeyWhere(std::string_view key) const {
  const Entry* e = Find(key);
  return e != nullptr ? e->key_where : where_;
}

std::optional<Scalar> MapReader::String(std::string_view key) {
  const Entry* e = Find(key);
  return e != nullptr ? source_->AsString(e->value, e->value_where) : std::nullopt;
}

std::optional<int> MapReader::Int(std::string_view key, int min, int max) {
  const Entry* e = Find(key);
  return e != nullptr ? source_->AsInt(e->value, e->value_where, min, max) : std::nullopt;
}

std::optional<bool> MapReader::Bool(std::string_view key) {
  const Entry* e = Find(key);
  return e != nullptr ? source_->AsBool(e->value, e->value_where) : std::nullopt;
}

std::optional<std::vector<YAML::Node>> MapReader::List(std::string_view key) {
  const Entry* e = Find(key);
  return e != nullptr ? source_->AsList(e->value, e->value_where) : std::nullopt;
}

std::optional<std::vector<Scalar>> MapReader::StringList(std::string_view key) {
  const Entry* e = Find(key);
  return e != nullptr ? source_->AsStringList(e->value, e->value_where) : std::nullopt;
}

std::optional<MapReader> MapReader::Map(std::string_view key, std::vector<std::string> allowed) {
  const Entry* e = Find(key);
  if (e == nullptr) {
    return std::nullopt;
  }
  MapReader reader(*source_, e->value, e->value_where, std::move(allowed));
  return reader.ok() ? std::optional(std::move(reader)) : std::nullopt;
}

void MapReader::Read(std::string_view key, std::string& out) {
  if (auto v = String(key)) {
    out = std::move(v->text);
  }
}

void MapReader::Read(std::string_view key, int& out, int min, int max) {
  if (auto v = Int(key, min, max)) {
    out = *v;
  }
}

void MapReader::Read(std::string_view key, bool& out) {
  if (auto v = Bool(key)) {
    out = *v;
  }
}

}  // namespace gpuctl::yaml
