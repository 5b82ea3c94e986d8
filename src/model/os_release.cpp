#include "gpuctl/model/os_release.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <fmt/format.h>

namespace gpuctl {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool IsNameChar(char c) {
  return IsNameStart(c) || std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// The value after '=' as sh would read it, without expansion. nullopt when a
// quote never closes: the line is not a complete assignment.
std::optional<std::string> ShellValue(std::string_view text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t') {
      break;  // the word ends; what follows (a comment) is not part of it
    }
    if (c == '\\') {
      if (i + 1 < text.size()) {
        out += text[i + 1];
      }
      i += 2;
    } else if (c == '\'') {
      const std::size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) {
        return std::nullopt;
      }
      out += text.substr(i + 1, end - i - 1);
      i = end + 1;
    } else if (c == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        const char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        // Inside double quotes sh gives backslash a meaning only before
        // these; anywhere else it is an ordinary character.
        if (d == '\\' && i + 1 < text.size() &&
            std::string_view("$`\"\\").find(text[i + 1]) != std::string_view::npos) {
          out += text[i + 1];
          i += 2;
          continue;
        }
        out += d;
        ++i;
      }
      if (!closed) {
        return std::nullopt;
      }
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  return s;
}

// "9.4" -> "9"; "22.04.4" -> "22.04" when `parts` is 2.
std::string LeadingParts(const std::string& version, int parts) {
  std::size_t dot = 0;
  for (int i = 0; i < parts; ++i) {
    dot = version.find('.', i == 0 ? 0 : dot + 1);
    if (dot == std::string::npos) {
      return version;
    }
  }
  return version.substr(0, dot);
}

std::string SupportedList() {
  std::string out;
  for (const auto& name : KnownOsNames()) {
    if (!out.empty()) {
      out += ", ";
    }
    out += name;
  }
  return out;
}

// The inventory-style name the file stands for, supported or not:
// "ubuntu-22.04", "rocky-9", "centos-stream-9", "centos-7", "fedora-40".
std::string CandidateName(const OsReleaseFile& file) {
  std::string id = file.Get("ID");
  const std::string version = file.Get("VERSION_ID");
  if (id == "centos" && file.Get("NAME").find("Stream") != std::string::npos) {
    id = "centos-stream";
  }
  // Ubuntu names a release by year and month; everyone else here by major.
  const std::string compared = id == "ubuntu" ? LeadingParts(version, 2) : LeadingParts(version, 1);
  return compared.empty() ? id : id + "-" + compared;
}

// " (ID_LIKE: rhel centos fedora)", or "" without ID_LIKE.
std::string LikeHint(const OsReleaseFile& file) {
  const std::string like = file.Get("ID_LIKE");
  return like.empty() ? "" : fmt::format(" (ID_LIKE: {})", like);
}

}  // namespace

std::string OsReleaseFile::Get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? std::string() : it->second;
}

std::vector<std::string> OsReleaseFile::IdLike() const {
  std::vector<std::string> out;
  std::istringstream in(Get("ID_LIKE"));
  for (std::string id; in >> id;) {
    out.push_back(id);
  }
  return out;
}

std::string OsReleaseFile::Describe() const {
  const std::string id = Get("ID");
  const std::string version = Get("VERSION_ID");
  const std::string pretty = Get("PRETTY_NAME").empty() ? Get("NAME") : Get("PRETTY_NAME");
  return fmt::format("{}{}{}", id.empty() ? "no ID" : id,
                     version.empty() ? "" : fmt::format(" {}", version),
                     pretty.empty() ? "" : fmt::format(" ({})", pretty));
}

OsReleaseFile ParseOsReleaseFile(std::string_view text) {
  OsReleaseFile file;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    line = TrimLeft(line);
    if (line.empty() || line.front() == '#') {
      continue;
    }
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0 || !IsNameStart(line.front()) ||
        !std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(eq), IsNameChar)) {
      continue;
    }
    if (auto value = ShellValue(line.substr(eq + 1))) {
      file.values[std::string(line.substr(0, eq))] = std::move(*value);
    }
  }
  return file;
}

IdentifiedOs IdentifyOs(const OsReleaseFile& file) {
  IdentifiedOs out;
  if (file.Get("ID").empty()) {
    out.error = "os-release sets no ID, so gpuctl cannot tell which OS the node runs";
    return out;
  }
  const std::string name = CandidateName(file);
  if (auto os = ParseOs(name)) {
    out.os = *os;
    return out;
  }
  if (auto advice = EndOfLifeAdvice(name)) {
    out.error = fmt::format("/etc/os-release says {}: {}", file.Describe(), *advice);
    return out;
  }
  out.error = fmt::format(
      "/etc/os-release says {}{}, which gpuctl does not support (a derivative is not taken for "
      "the OS it resembles); supported: {}",
      file.Describe(), LikeHint(file), SupportedList());
  return out;
}

IdentifiedOs CheckNodeOs(const OsRelease& declared, const OsReleaseFile& file) {
  IdentifiedOs identified = IdentifyOs(file);
  if (declared.IsAuto()) {
    if (!identified.os) {
      identified.error = "os: auto, but " + identified.error;
    }
    return identified;
  }
  if (identified.os && identified.os->Name() == declared.Name()) {
    return identified;
  }
  IdentifiedOs out;
  std::string hint;
  if (identified.os) {
    hint = fmt::format("; if the node is right, write os: {} (or os: auto)", identified.os->Name());
  } else if (auto advice = EndOfLifeAdvice(CandidateName(file))) {
    hint = "; " + *advice;
  }
  const auto like = file.IdLike();
  const bool resembles = std::find(like.begin(), like.end(), declared.id) != like.end();
  out.error = fmt::format(
      "the inventory says {} but /etc/os-release says {}{}{}", declared.Name(), file.Describe(),
      resembles ? fmt::format(", which is only like {}", declared.id) : "", hint);
  return out;
}

const std::string& OsReleaseScript() {
  static const std::string kScript = "cat /etc/os-release 2>/dev/null || cat /usr/lib/os-release\n";
  return kScript;
}

}  // namespace gpuctl
