#include "gpuctl/util/json_line.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace gpuctl {

std::string JsonQuote(std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    std::string quoted;
    quoted.reserve(text.size() + 2);
    quoted += '"';
    quoted += text;
    quoted += '"';
    return quoted;
  }
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void JsonLine::Key(std::string_view key) {
  body_ += body_.empty() ? "\"" : ",\"";
  body_ += key;  // keys are gpuctl's own names: plain ASCII
  body_ += "\":";
}

JsonLine& JsonLine::Text(std::string_view key, std::string_view value) {
  Key(key);
  body_ += JsonQuote(value);
  return *this;
}

JsonLine& JsonLine::Number(std::string_view key, long long value) {
  Key(key);
  body_ += std::to_string(value);
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

std::string JsonLine::str() const { return '{' + body_ + '}'; }

}  // namespace gpuctl
