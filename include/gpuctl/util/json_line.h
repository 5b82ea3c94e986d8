// JsonLine: one JSON object written field by field, for output that is
// written in bulk (a journal line per event, a plan item per line): building
// an nlohmann::json object for each cost a large apply a fifth of its time.
// Strings that are plain printable ASCII are copied as they are; any other
// string is escaped by nlohmann::json, with bytes that are not UTF-8
// replaced by U+FFFD, so every line is valid JSON whatever a node printed.
#pragma once

#include <string>
#include <string_view>

namespace gpuctl {

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view text);
// The same, appended to `out` (no string of its own for the common case).
void AppendJsonQuoted(std::string& out, std::string_view text);

class JsonLine {
 public:
  JsonLine& Text(std::string_view key, std::string_view value);
  JsonLine& Number(std::string_view key, long long value);
  JsonLine& Real(std::string_view key, double value);
  JsonLine& Flag(std::string_view key, bool value);
  // A value already written as JSON (a nested object or array).
  JsonLine& Raw(std::string_view key, std::string_view json);
  // Room for `bytes` of fields, so that a line of known size grows once.
  void Reserve(std::size_t bytes) { body_.reserve(bytes); }
  // The object, braces included.
  [[nodiscard]] std::string str() const;
  // The same, moved out: the line is spent (a million journal lines are a
  // million copies saved).
  [[nodiscard]] std::string Take();

 private:
  void Key(std::string_view key);
  std::string body_ = "{";  // the opening brace, then the fields
};

}  // namespace gpuctl
