#include "gpuctl/model/syntax.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace gpuctl {

namespace {

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool IsPort(std::string_view text) {
  constexpr int kMaxPort = 65535;
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && value >= 1 && value <= kMaxPort;
}

}  // namespace

// inet_pton reads a C string: an embedded NUL would end the text early and
// let "10.0.0.1\0anything" pass as 10.0.0.1.
bool IsIpv4(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    return false;
  }
  in_addr out{};
  return inet_pton(AF_INET, std::string(text).c_str(), &out) == 1;
}

bool IsIpv6(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    return false;
  }
  in6_addr out{};
  return inet_pton(AF_INET6, std::string(text).c_str(), &out) == 1;
}

bool IsHostname(std::string_view text) {
  constexpr std::size_t kMaxName = 253;
  constexpr std::size_t kMaxLabel = 63;
  if (text.empty() || text.size() > kMaxName) {
    return false;
  }
  std::string_view last;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t dot = text.find('.', start);
    if (dot == std::string_view::npos) {
      dot = text.size();
    }
    const std::string_view label = text.substr(start, dot - start);
    if (label.empty() || label.size() > kMaxLabel || label.front() == '-' || label.back() == '-' ||
        !std::all_of(label.begin(), label.end(), [](char c) { return IsAlnum(c) || c == '-'; })) {
      return false;
    }
    last = label;
    start = dot + 1;
  }
  return !std::all_of(last.begin(), last.end(), IsDigit);
}

bool IsAddress(std::string_view text) { return IsIpv4(text) || IsIpv6(text) || IsHostname(text); }

bool IsCidr(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  const std::string_view address = text.substr(0, slash);
  const std::string_view prefix = text.substr(slash + 1);
  int bits = -1;
  const char* end = prefix.data() + prefix.size();
  auto [ptr, ec] = std::from_chars(prefix.data(), end, bits);
  if (prefix.empty() || !IsDigit(prefix.front()) || ec != std::errc() || ptr != end) {
    return false;
  }
  if (IsIpv4(address)) {
    return bits <= 32;
  }
  return IsIpv6(address) && bits <= 128;
}

std::optional<std::string> Ipv4Slash24(std::string_view address) {
  if (!IsIpv4(address)) {
    return std::nullopt;
  }
  return fmt::format("{}.0/24", address.substr(0, address.rfind('.')));
}

bool IsJumpHost(std::string_view text) {
  std::string_view host = text.substr(text.find('@') + 1);
  std::optional<std::string_view> port;
  if (!host.empty() && host.front() == '[') {
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    const std::string_view rest = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return false;
      }
      port = rest.substr(1);
    }
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    port = host.substr(host.find(':') + 1);
    host = host.substr(0, host.find(':'));
  }
  return IsAddress(host) && (!port || IsPort(*port));
}

bool IsEnvVarName(std::string_view text) {
  return !text.empty() && !IsDigit(text.front()) &&
         std::all_of(text.begin(), text.end(), [](char c) { return IsAlnum(c) || c == '_'; });
}

}  // namespace gpuctl
