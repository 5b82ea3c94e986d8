// The value kinds of include/gpuctl/model/value_kinds.h. Each check first looks
// for a character the kind never holds and names it, so that the message for
// a hostile value ("a line break", "'$'") says what is wrong with it even
// when other rules would also fail.
#include "gpuctl/model/value_kinds.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpuctl/model/syntax.h"

namespace gpuctl {

namespace {

constexpr std::size_t kMaxPath = 4095;  // PATH_MAX less its terminating NUL
constexpr std::size_t kMaxName = 64;    // Slurm's and the kernel's name buffers
constexpr std::size_t kMaxGpuModel = 96;
constexpr std::size_t kMaxUrl = 2048;
constexpr std::size_t kMaxEnvName = 128;
constexpr std::size_t kMaxUserName = 32;
constexpr std::size_t kMaxInterface = 15;
constexpr std::size_t kMaxOptions = 1024;
constexpr int kMaxPort = 65535;

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAsciiAlnum(char c) { return IsLetter(c) || IsAsciiDigit(c); }
bool In(char c, std::string_view set) { return set.find(c) != std::string_view::npos; }

// Characters a path on a node or a URL may hold: enough for real layouts
// (versions, %-escapes, ~user, a:b) and nothing a shell, an /etc/exports or
// fstab line, a TOML string or a YAML scalar reads specially ($, `, quotes,
// \, ;, &, |, spaces, newlines, #, ?, *).
bool PathChar(char c) { return IsAsciiAlnum(c) || In(c, "-._~/%+:@=,"); }
bool NameChar(char c) { return IsAsciiAlnum(c) || In(c, "_-."); }

// The first character of `text` that `ok` refuses, described; "" when none.
template <typename Ok>
std::string FirstBad(std::string_view text, Ok ok) {
  for (char c : text) {
    if (!ok(c)) {
      return DescribeChar(c);
    }
  }
  return "";
}

std::string TooLong(std::string_view text, std::size_t max) {
  return text.size() > max ? fmt::format("longer than {} characters", max) : "";
}

bool HasDotDot(std::string_view path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (path.substr(start, end - start) == "..") {
      return true;
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return false;
}

// Shared by the name kinds: empty, then a bad character, then the first
// character, then the length.
std::string NameProblem(std::string_view text, std::size_t max, bool (*first_ok)(char),
                        std::string_view first_rule, bool (*char_ok)(char),
                        std::string_view chars) {
  if (text.empty()) {
    return "expected a name, got an empty string";
  }
  if (std::string bad = FirstBad(text, char_ok); !bad.empty()) {
    return fmt::format("may not contain {} (only {})", bad, chars);
  }
  if (!first_ok(text.front())) {
    return fmt::format("must start with {}", first_rule);
  }
  return TooLong(text, max);
}

bool StartsAlnum(char c) { return IsAsciiAlnum(c); }

}  // namespace

std::string DescribeChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (c == '\n' || c == '\r') return "a line break";
  if (c == ' ' || c == '\t') return "whitespace";
  if (c == '\0') return "a NUL character";
  if (u < 0x20 || u == 0x7f) return fmt::format("a control character (0x{:02x})", u);
  if (u >= 0x80) return "a non-ASCII character";
  return fmt::format("'{}'", c);
}

std::string ShownValue(std::string_view text) {
  constexpr std::size_t kMaxShown = 64;
  const bool printable = std::all_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f;
  });
  return printable && text.size() <= kMaxShown ? fmt::format(" '{}'", text) : "";
}

std::string HostNameProblem(std::string_view text) {
  if (text.empty()) {
    return "expected a host name, got an empty string";
  }
  if (std::string bad = FirstBad(text, [](char c) { return IsAsciiAlnum(c) || In(c, "-."); });
      !bad.empty()) {
    return fmt::format("a host name may not contain {} (letters, digits, '-' and '.' only)", bad);
  }
  if (!IsHostname(text)) {
    return "not a host name (RFC 1123: dot-separated labels of 1-63 letters, digits and '-', "
           "not starting or ending with '-', at most 253 characters, not all digits)";
  }
  return "";
}

std::string AddressProblem(std::string_view text) {
  if (text.empty()) {
    return "expected an address, got an empty string";
  }
  if (std::string bad = FirstBad(text, [](char c) { return IsAsciiAlnum(c) || In(c, "-.:"); });
      !bad.empty()) {
    return fmt::format("an address may not contain {}", bad);
  }
  if (!IsAddress(text)) {
    return "expected an IPv4 address, an IPv6 address or a host name";
  }
  return "";
}

std::string CidrProblem(std::string_view text) {
  if (std::string bad = FirstBad(text, [](char c) { return IsAsciiAlnum(c) || In(c, ".:/"); });
      !bad.empty()) {
    return fmt::format("a CIDR may not contain {}", bad);
  }
  if (!IsCidr(text)) {
    return "expected an address and a prefix length, like 10.244.0.0/16";
  }
  return "";
}

std::string NfsClientProblem(std::string_view text) {
  constexpr std::string_view kExpected =
      "expected one client as /etc/exports takes it: '*', a host name (wildcards '*' and "
      "'?' allowed), an IP address, a network (10.0.0.0/8 or 10.0.0.0/255.0.0.0) or "
      "@netgroup";
  if (text.empty()) {
    return std::string(kExpected);
  }
  if (std::string bad = FirstBad(text, [](char c) { return IsAsciiAlnum(c) || In(c, "-._:/*?@"); });
      !bad.empty()) {
    return fmt::format("an NFS client may not contain {}", bad);
  }
  if (text == "*" || IsIpv4(text) || IsIpv6(text) || IsCidr(text)) {
    return "";
  }
  if (text.front() == '@') {
    const std::string_view group = text.substr(1);
    const bool ok = !group.empty() && group.size() <= kMaxName && IsAsciiAlnum(group.front()) &&
                    std::all_of(group.begin(), group.end(), NameChar);
    return ok ? "" : "a netgroup is '@' and a name of letters, digits, '_', '-' and '.'";
  }
  if (const std::size_t slash = text.find('/'); slash != std::string_view::npos) {
    if (IsIpv4(text.substr(0, slash)) && IsIpv4(text.substr(slash + 1))) {
      return "";  // address/netmask
    }
    return std::string(kExpected);
  }
  // A wildcard host name is a host name once its wildcards stand for a letter.
  std::string host(text);
  std::replace_if(
      host.begin(), host.end(), [](char c) { return c == '*' || c == '?'; }, 'a');
  if (host.find('@') == std::string::npos && host.find(':') == std::string::npos &&
      IsHostname(host)) {
    return "";
  }
  return std::string(kExpected);
}

std::string MountOptionsProblem(std::string_view text) {
  if (text.empty()) {
    return "expected options, got an empty string";
  }
  if (std::string bad = FirstBad(text, [](char c) { return IsAsciiAlnum(c) || In(c, "_-.:+@=,"); });
      !bad.empty()) {
    return fmt::format(
        "options may not contain {} (a comma-separated list of name or "
        "name=value)",
        bad);
  }
  if (std::string long_ = TooLong(text, kMaxOptions); !long_.empty()) {
    return long_;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view option = text.substr(start, comma - start);
    const std::size_t eq = option.find('=');
    const std::string_view name = option.substr(0, eq);
    if (name.empty() || !(IsLetter(name.front()) || name.front() == '_') ||
        !std::all_of(name.begin(), name.end(), NameChar)) {
      // Only safe characters are left, so the option may be shown.
      return fmt::format(
          "'{}' is not an option (name or name=value; a name of letters, digits, "
          "'_', '-' and '.', starting with a letter or '_')",
          option.substr(0, kMaxName));
    }
    if (eq != std::string_view::npos) {
      const std::string_view value = option.substr(eq + 1);
      if (value.empty() || value.find('=') != std::string_view::npos) {
        return fmt::format("option '{}' needs one value after '='", name);
      }
    }
    if (comma == text.size()) {
      break;
    }
    start = comma + 1;
  }
  return "";
}

std::string AbsolutePathProblem(std::string_view text) {
  if (text.empty() || text.front() != '/') {
    return "expected an absolute path";
  }
  if (std::string bad = FirstBad(text, PathChar); !bad.empty()) {
    return fmt::format("a path may not contain {}", bad);
  }
  if (HasDotDot(text)) {
    return "a path may not contain '..'";
  }
  return TooLong(text, kMaxPath);
}

std::string LocalPathProblem(std::string_view text) {
  if (std::string bad = FirstBad(text,
                                 [](char c) {
                                   const auto u = static_cast<unsigned char>(c);
                                   return u >= 0x20 && u != 0x7f;
                                 });
      !bad.empty()) {
    return fmt::format("a path may not contain {}", bad);
  }
  return TooLong(text, kMaxPath);
}

std::string SlurmNameProblem(std::string_view text) {
  return NameProblem(text, kMaxName, StartsAlnum, "a letter or a digit", NameChar,
                     "letters, digits, '_', '-' and '.'");
}

namespace {

// The fields of a Slurm time: days (-1 when not written), then the
// colon-separated ones; false when the text is not digits in that shape.
struct SlurmTimeFields {
  long long days = -1;
  std::vector<long long> rest;
};

bool IsUnlimited(std::string_view text) {
  std::string word(text);
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return word == "UNLIMITED" || word == "INFINITE";
}

std::string SplitSlurmTime(std::string_view text, SlurmTimeFields& out) {
  const auto number = [](std::string_view digits, long long& value) {
    if (digits.empty() || digits.size() > 7 ||
        !std::all_of(digits.begin(), digits.end(), IsAsciiDigit)) {
      return false;
    }
    value = std::stoll(std::string(digits));
    return true;
  };
  std::string_view clock = text;
  if (const auto dash = text.find('-'); dash != std::string_view::npos) {
    if (!number(text.substr(0, dash), out.days)) {
      return "days must be a number before '-'";
    }
    clock = text.substr(dash + 1);
  }
  for (std::size_t start = 0;;) {
    const auto colon = clock.find(':', start);
    long long value = 0;
    if (!number(clock.substr(start, colon - start), value)) {
      return "each field must be a number of at most 7 digits";
    }
    out.rest.push_back(value);
    if (colon == std::string_view::npos) {
      break;
    }
    start = colon + 1;
  }
  if (out.rest.size() > 3) {
    return "at most three ':'-separated fields";
  }
  // The first field after days is hours; without days, minutes unless three.
  const bool hours_first = out.days >= 0 || out.rest.size() == 3;
  if (out.days >= 0 && out.rest[0] >= 24) {
    return "hours after days must be below 24";
  }
  for (std::size_t i = 1; i < out.rest.size(); ++i) {
    if (out.rest[i] >= 60) {
      return hours_first && i == 1 ? "minutes must be below 60" : "seconds must be below 60";
    }
  }
  return "";
}

}  // namespace

std::string SlurmTimeProblem(std::string_view text) {
  constexpr const char* kForms =
      "a time is UNLIMITED, INFINITE or numbers: minutes, hours:minutes:seconds, "
      "days-hours[:minutes[:seconds]]";
  if (IsUnlimited(text)) {
    return "";
  }
  if (text.empty()) {
    return fmt::format("may not be empty ({})", kForms);
  }
  // Hostile characters are named first; letters only spell the two words.
  if (std::string bad =
          FirstBad(text, [](char c) { return IsAsciiAlnum(c) || c == ':' || c == '-'; });
      !bad.empty()) {
    return fmt::format("a time may not contain {}", bad);
  }
  if (std::any_of(text.begin(), text.end(), IsLetter)) {
    return kForms;
  }
  SlurmTimeFields fields;
  return SplitSlurmTime(text, fields);
}

long long SlurmTimeMinutes(std::string_view text) {
  if (IsUnlimited(text)) {
    return -1;
  }
  SlurmTimeFields f;
  SplitSlurmTime(text, f);
  long long seconds = 0;
  if (f.days >= 0) {
    // days-hours[:minutes[:seconds]]
    seconds = f.days * 86400 + f.rest[0] * 3600;
    if (f.rest.size() > 1) seconds += f.rest[1] * 60;
    if (f.rest.size() > 2) seconds += f.rest[2];
  } else if (f.rest.size() == 3) {
    seconds = f.rest[0] * 3600 + f.rest[1] * 60 + f.rest[2];
  } else {
    seconds = f.rest[0] * 60 + (f.rest.size() > 1 ? f.rest[1] : 0);
  }
  return (seconds + 59) / 60;
}

std::string ClusterNameProblem(std::string_view text) {
  // Also a directory name under the state directory: the same rules as a
  // Slurm name keep it one component ('/' is refused) and never "." or "..".
  return NameProblem(text, kMaxName, StartsAlnum, "a letter or a digit", NameChar,
                     "letters, digits, '_', '-' and '.'");
}

std::string IbDeviceProblem(std::string_view text) {
  return NameProblem(
      text, kMaxName, [](char c) { return IsLetter(c); }, "a letter", NameChar,
      "letters, digits, '_', '-' and '.'");
}

std::string GpuModelProblem(std::string_view text) {
  if (text.empty()) {
    return "expected a GPU model, got an empty string";
  }
  if (std::string bad =
          FirstBad(text, [](char c) { return IsAsciiAlnum(c) || c == ' ' || In(c, "-_.()+"); });
      !bad.empty()) {
    if (bad == "whitespace") {
      bad = "a tab";
    }
    return fmt::format(
        "a GPU model may not contain {} (letters, digits, spaces and "
        "'-_.()+' only)",
        bad);
  }
  if (!IsAsciiAlnum(text.front()) || text.back() == ' ') {
    return "a GPU model starts with a letter or a digit and does not end with a space";
  }
  if (text.find("  ") != std::string_view::npos) {
    return "a GPU model has single spaces between words";
  }
  return TooLong(text, kMaxGpuModel);
}

std::string CniProblem(std::string_view text) {
  if (text == "flannel" || text == "calico") {
    return "";
  }
  return "gpuctl installs the flannel or the Calico pod network (k8s.cni) and no other; use "
         "\"flannel\" or \"calico\"";
}

std::string VersionProblem(std::string_view text) {
  if (text.empty()) {
    return "expected a version, got an empty string";
  }
  if (std::string bad = FirstBad(text, [](char c) { return IsAsciiAlnum(c) || In(c, ".-_+~"); });
      !bad.empty()) {
    return fmt::format("a version may not contain {} (letters, digits and '.-_+~' only)", bad);
  }
  if (!IsAsciiAlnum(text.front())) {
    return "a version starts with a letter or a digit";
  }
  if (text.find("..") != std::string_view::npos) {
    return "a version may not contain '..'";
  }
  return TooLong(text, kMaxName);
}

std::string DriverVersionProblem(std::string_view text) {
  constexpr const char* kWant = "expected a branch like '550' or an exact version like '550.54.14'";
  // One number (a branch) or three (a release); each 1 to 6 digits.
  constexpr std::size_t kMaxDigits = 6;
  std::size_t numbers = 0;
  std::size_t digits = 0;
  for (const char c : text) {
    if (c == '.') {
      if (digits == 0) return kWant;
      ++numbers;
      digits = 0;
    } else if (c >= '0' && c <= '9' && digits < kMaxDigits) {
      ++digits;
    } else {
      return kWant;
    }
  }
  if (digits == 0) return kWant;
  ++numbers;
  return numbers == 1 || numbers == 3 ? "" : kWant;
}

std::string InterfaceNameProblem(std::string_view text) {
  return NameProblem(text, kMaxInterface, StartsAlnum, "a letter or a digit", NameChar,
                     "letters, digits, '_', '-' and '.'");
}

std::string SysctlKeyProblem(std::string_view text) {
  constexpr std::size_t kMaxSysctlKey = 255;
  if (text.empty()) {
    return "expected a kernel parameter name, got an empty string";
  }
  if (std::string bad = FirstBad(
          text, [](char c) { return (c >= 'a' && c <= 'z') || IsAsciiDigit(c) || In(c, "_-./"); });
      !bad.empty()) {
    return fmt::format(
        "a kernel parameter name may not contain {} (lower-case letters, digits, '_', '-', "
        "and '.' or '/' between its parts)",
        bad);
  }
  if (!IsLetter(text.front())) {
    return "a kernel parameter name starts with a letter";
  }
  // sysctl.d(5): the first separator decides which one separates the parts.
  const std::size_t first = text.find_first_of("./");
  if (first == std::string_view::npos) {
    return "a kernel parameter name has parts separated by '.' (vm.swappiness)";
  }
  const char separator = text[first];
  if (text.back() == separator || text.find(std::string(2, separator)) != std::string_view::npos) {
    return "a kernel parameter name has no empty part";
  }
  if (separator == '.' && text.find('/') != std::string_view::npos) {
    return "a kernel parameter name separates its parts with '.' or '/', not both (write "
           "net/ipv4/conf/eth0.100/rp_filter for a name with a dot inside a part)";
  }
  return TooLong(text, kMaxSysctlKey);
}

std::string SysctlValueProblem(std::string_view text) {
  constexpr std::size_t kMaxSysctlValue = 1024;
  if (text.empty()) {
    return "expected a value, got an empty string";
  }
  if (std::string bad =
          FirstBad(text, [](char c) { return IsAsciiAlnum(c) || In(c, " -_.:/,+=@%"); });
      !bad.empty()) {
    return fmt::format(
        "a kernel parameter value may not contain {} (words of letters, digits and "
        "'-_.:/,+=@%' separated by single spaces)",
        bad);
  }
  if (text.front() == ' ' || text.back() == ' ' || text.find("  ") != std::string_view::npos) {
    return "a kernel parameter value has its words separated by single spaces, none before or "
           "after";
  }
  return TooLong(text, kMaxSysctlValue);
}

std::string EnvVarNameProblem(std::string_view text) {
  if (text.empty()) {
    return "expected a variable name, got an empty string";
  }
  if (std::string bad = FirstBad(text, [](char c) { return IsAsciiAlnum(c) || c == '_'; });
      !bad.empty()) {
    return fmt::format("a variable name may not contain {} (letters, digits and '_' only)", bad);
  }
  if (IsAsciiDigit(text.front())) {
    return "a variable name does not start with a digit";
  }
  return TooLong(text, kMaxEnvName);
}

std::string UserNameProblem(std::string_view text) {
  return NameProblem(
      text, kMaxUserName, [](char c) { return IsAsciiAlnum(c) || c == '_'; },
      "a letter, a digit or '_'", NameChar, "letters, digits, '_', '-' and '.'");
}

namespace {

// One component of an image's path: lower-case letters and digits, joined by
// '.', '_' or '-' (never first or last).
bool ImagePathComponent(std::string_view c) {
  const auto lower_alnum = [](char ch) { return IsAsciiDigit(ch) || (ch >= 'a' && ch <= 'z'); };
  if (c.empty() || !lower_alnum(c.front()) || !lower_alnum(c.back())) return false;
  return std::all_of(c.begin(), c.end(), [&](char ch) { return lower_alnum(ch) || In(ch, "._-"); });
}

}  // namespace

std::string ImageReferenceProblem(std::string_view text) {
  if (text.empty()) {
    return "expected an image reference (registry/path:tag), got an empty string";
  }
  if (const std::string bad =
          FirstBad(text, [](char c) { return IsAsciiAlnum(c) || In(c, "._-/:@"); });
      !bad.empty()) {
    return fmt::format("an image reference may not contain {}", bad);
  }
  if (std::string long_ = TooLong(text, 512); !long_.empty()) {
    return long_;
  }
  std::string_view name = text;
  if (const std::size_t at = text.find('@'); at != std::string_view::npos) {
    const std::string_view digest = text.substr(at + 1);
    const bool hex = digest.size() == 7 + 64 && digest.rfind("sha256:", 0) == 0 &&
                     std::all_of(digest.begin() + 7, digest.end(),
                                 [](char c) { return IsAsciiDigit(c) || (c >= 'a' && c <= 'f'); });
    if (!hex) return "an image digest is @sha256: and 64 lower-case hex digits";
    name = text.substr(0, at);
  }
  const std::size_t last_slash = name.rfind('/');
  if (const std::size_t colon = name.rfind(':');
      colon != std::string_view::npos &&
      (last_slash == std::string_view::npos || colon > last_slash)) {
    const std::string_view tag = name.substr(colon + 1);
    const bool tag_ok =
        !tag.empty() && tag.size() <= 128 && tag.front() != '.' && tag.front() != '-' &&
        std::all_of(tag.begin(), tag.end(), [](char c) { return IsAsciiAlnum(c) || In(c, "_.-"); });
    if (!tag_ok) {
      return fmt::format("invalid tag '{}' (letters, digits, '_', '.' and '-', not first)", tag);
    }
    name = name.substr(0, colon);
  }
  std::vector<std::string_view> parts;
  for (std::size_t from = 0;;) {
    const std::size_t slash = name.find('/', from);
    parts.push_back(name.substr(from, slash - from));
    if (slash == std::string_view::npos) break;
    from = slash + 1;
  }
  std::size_t first_path = 0;
  const std::string_view head = parts.front();
  if (parts.size() > 1 &&
      (head.find_first_of(".:") != std::string_view::npos || head == "localhost")) {
    first_path = 1;  // a registry: host[:port]
    const std::size_t colon = head.find(':');
    const std::string_view host = head.substr(0, colon);
    const std::string_view port = colon == std::string_view::npos ? "" : head.substr(colon + 1);
    const bool host_ok = !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
      return IsAsciiAlnum(c) || In(c, ".-");
    });
    const bool port_ok =
        colon == std::string_view::npos ||
        (!port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), IsAsciiDigit) &&
         std::stoi(std::string(port)) >= 1 && std::stoi(std::string(port)) <= kMaxPort);
    if (!host_ok || !port_ok) {
      return fmt::format("invalid registry '{}' (a host name, and a port 1-65535)", head);
    }
  }
  for (std::size_t i = first_path; i < parts.size(); ++i) {
    if (!ImagePathComponent(parts[i])) {
      return fmt::format(
          "invalid image path component '{}' (lower-case letters and digits, joined by '.', "
          "'_' or '-')",
          parts[i]);
    }
  }
  return "";
}

std::string UrlProblem(std::string_view text) {
  std::string_view rest;
  if (text.rfind("http://", 0) == 0) {
    rest = text.substr(7);
  } else if (text.rfind("https://", 0) == 0) {
    rest = text.substr(8);
  } else {
    return "expected an http:// or https:// URL (host[:port][/path])";
  }
  // The whole URL first: a hostile value is named by its worst character,
  // whichever part it hides in.
  if (const std::string bad = FirstBad(rest, PathChar); !bad.empty()) {
    return fmt::format("a URL may not contain {}", bad);
  }
  if (std::string long_ = TooLong(text, kMaxUrl); !long_.empty()) {
    return long_;
  }
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return "a mirror URL may not carry credentials (user@)";
  }
  std::string_view host = authority;
  if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    const std::string_view port = authority.substr(colon + 1);
    const bool digits =
        !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), IsAsciiDigit);
    if (!digits || std::stoi(std::string(port)) < 1 || std::stoi(std::string(port)) > kMaxPort) {
      return fmt::format("invalid port '{}' (1-65535)", port);
    }
  }
  if (host.empty()) {
    return "the URL has no host";
  }
  if (!IsHostname(host) && !IsIpv4(host)) {
    return fmt::format("invalid host '{}' in the URL", host);
  }
  if (HasDotDot(path)) {
    return "a URL path may not contain '..'";
  }
  return "";
}

}  // namespace gpuctl
