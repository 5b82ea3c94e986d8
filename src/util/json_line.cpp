#include "gpuctl/util/json_line.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

namespace gpuctl {

void AppendJsonQuoted(std::string& out, std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    out.reserve(out.size() + text.size() + 2);
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(text))
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string JsonQuote(std::string_view text) {
  std::string quoted;
  AppendJsonQuoted(quoted, text);
  return quoted;
}

void JsonLine::Key(std::string_view key) {
  body_ += body_.size() == 1 ? "\"" : ",\"";
  body_ += key;  // keys are gpuctl's own names: plain ASCII
  body_ += "\":";
}

JsonLine& JsonLine::Text(std::string_view key, std::string_view value) {
  Key(key);
  AppendJsonQuoted(body_, value);
  return *this;
}

JsonLine& JsonLine::Number(std::string_view key, long long value) {
  Key(key);
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  body_.append(digits, end);
  return *this;
}

JsonLine& JsonLine::Real(std::string_view key, double value) {
  Key(key);
  body_ += nlohmann::json(value).dump();
  return *this;
}

JsonLine& JsonLine::Flag(std::string_view key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}

JsonLine& JsonLine::Raw(std::string_view key, std::string_view json) {
  Key(key);
  body_ += json;
  return *this;
}

std::string JsonLine::str() const { return body_ + '}'; }

std::string JsonLine::Take() {
  body_ += '}';
  std::string line = std::move(body_);
  body_ = "{";
  return line;
}

}  // namespace gpuctl
