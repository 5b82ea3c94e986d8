#include "gpuctl/run/failure_text.h"

#include <array>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace gpuctl {
namespace {

// Where a pattern has to be in a line, once the line's surrounding
// whitespace is trimmed.
enum class At { kStart, kAnywhere, kEnd };

struct Pattern {
  At at;
  std::string_view text;
};

// Lines that never say why a command failed. They are dropped before
// anything else: they come first in a failed install and crowded the cause
// out of the old "last lines" message, and some carry an errno text of their
// own that is no cause (dpkg-preconfigure's "No such file or directory").
constexpr std::array kNoise = {
    // debconf on a node without a terminal or apt-utils: "delaying package
    // configuration", "unable to initialize frontend", "falling back to ...".
    Pattern{At::kStart, "debconf: "},
    Pattern{At::kStart, "dpkg-preconfigure: "},
    // apt's warning when a script calls `apt` rather than apt-get.
    Pattern{At::kStart, "WARNING: apt does not have a stable CLI interface"},
    // apt's, dpkg's and dnf's progress: says what ran, never why it failed.
    Pattern{At::kStart, "Reading package lists"},
    Pattern{At::kStart, "Building dependency tree"},
    Pattern{At::kStart, "Reading state information"},
    Pattern{At::kStart, "(Reading database"},
    Pattern{At::kStart, "Get:"},
    Pattern{At::kStart, "Hit:"},
    Pattern{At::kStart, "Ign:"},
    Pattern{At::kStart, "Fetched "},
    Pattern{At::kStart, "Progress: ["},
    Pattern{At::kStart, "Last metadata expiration check"},
    // curl's progress meter (a download without -s): its header and rows.
    Pattern{At::kStart, "% Total"},
    Pattern{At::kStart, "Dload"},
    Pattern{At::kAnywhere, "--:--:--"},
};

// Lines that say why: what the tools gpuctl's steps run print when they fail.
constexpr std::array kExplaining = {
    // The OS's own reason (strerror texts), as cat, cp, tee, mv and
    // gpuctl_put print it: the cause of most failed writes and downloads.
    Pattern{At::kAnywhere, "No space left on device"},
    Pattern{At::kAnywhere, "Disk quota exceeded"},
    Pattern{At::kAnywhere, "Read-only file system"},
    Pattern{At::kAnywhere, "Permission denied"},
    Pattern{At::kAnywhere, "Operation not permitted"},
    Pattern{At::kAnywhere, "No such file or directory"},
    Pattern{At::kAnywhere, "Input/output error"},
    Pattern{At::kAnywhere, "Cannot allocate memory"},
    Pattern{At::kAnywhere, "Device or resource busy"},
    Pattern{At::kAnywhere, "Connection refused"},
    Pattern{At::kAnywhere, "Connection timed out"},
    Pattern{At::kAnywhere, "Connection reset by peer"},
    Pattern{At::kAnywhere, "Network is unreachable"},
    Pattern{At::kAnywhere, "No route to host"},
    // Name resolution, as curl, apt and getaddrinfo word it.
    Pattern{At::kAnywhere, "Could not resolve"},
    Pattern{At::kAnywhere, "Temporary failure resolving"},
    Pattern{At::kAnywhere, "Temporary failure in name resolution"},
    Pattern{At::kAnywhere, "Name or service not known"},
    // A command the script needs is missing (dash: "sh: 1: x: not found").
    Pattern{At::kEnd, ": not found"},
    Pattern{At::kAnywhere, ": command not found"},
    // apt: "E: Unable to locate package x", "E: Sub-process /usr/bin/dpkg
    // returned an error code (1)"; a failed download ("Err:3 ... 404").
    Pattern{At::kStart, "E: "},
    Pattern{At::kStart, "Err:"},
    Pattern{At::kAnywhere, "unmet dependencies"},
    // dpkg: which package failed and how (its maintainer script's exit
    // status, a file another package owns).
    Pattern{At::kStart, "dpkg: error"},
    Pattern{At::kStart, "dpkg-deb: error"},
    Pattern{At::kAnywhere, "error processing"},
    Pattern{At::kAnywhere, "trying to overwrite"},
    Pattern{At::kAnywhere, "subprocess returned error exit status"},
    Pattern{At::kStart, "Errors were encountered while processing"},
    // DKMS building the NVIDIA module ("Error! Bad return status for module
    // build on kernel: ...").
    Pattern{At::kStart, "Error! "},
    // dnf and rpm: "Error:" then " Problem: conflicting requests" and
    // "  - nothing provides x needed by y"; file conflicts; rpm's "error:
    // Failed dependencies:". helm's "Error: INSTALLATION FAILED: ..." and
    // kubectl's "error: ..." have the same first words.
    Pattern{At::kStart, "Error:"},
    Pattern{At::kStart, "error: "},
    Pattern{At::kStart, "Problem"},
    Pattern{At::kAnywhere, "nothing provides"},
    Pattern{At::kAnywhere, "conflicts with"},
    Pattern{At::kAnywhere, "No match for argument"},
    Pattern{At::kAnywhere, "Transaction check error"},
    // systemctl: "Job for x.service failed because ...", "Failed to start
    // x.service: Unit x.service not found."
    Pattern{At::kStart, "Job for "},
    Pattern{At::kStart, "Failed to "},
    // kubeadm: the phase that failed and its preflight checks; kubectl's
    // answer from the API server.
    Pattern{At::kAnywhere, "error execution phase"},
    Pattern{At::kAnywhere, "[ERROR "},
    Pattern{At::kStart, "Error from server"},
    // curl -f: "curl: (22) The requested URL returned error: 404".
    Pattern{At::kStart, "curl: ("},
    // Signatures: apt's and gpg's key errors, dnf's GPG check.
    Pattern{At::kAnywhere, "NO_PUBKEY"},
    Pattern{At::kAnywhere, "BADSIG"},
    Pattern{At::kAnywhere, "EXPKEYSIG"},
    Pattern{At::kAnywhere, "GPG check FAILED"},
    Pattern{At::kAnywhere, "public key is not installed"},
    Pattern{At::kAnywhere, "no valid OpenPGP data found"},
    // gpuctl's prelude says what it could not do ("gpuctl: cannot write
    // /etc/hosts"), after the tool's own reason.
    Pattern{At::kStart, "gpuctl: "},
};

constexpr std::string_view kSpace = " \t\r\n\v\f";

std::string_view Trim(std::string_view line) {
  const auto first = line.find_first_not_of(kSpace);
  if (first == std::string_view::npos) {
    return {};
  }
  return line.substr(first, line.find_last_not_of(kSpace) - first + 1);
}

template <std::size_t N>
bool AnyMatch(const std::array<Pattern, N>& table, std::string_view trimmed) {
  for (const Pattern& p : table) {
    const bool hit = p.at == At::kStart ? trimmed.starts_with(p.text)
                     : p.at == At::kEnd ? trimmed.ends_with(p.text)
                                        : trimmed.find(p.text) != std::string_view::npos;
    if (hit) {
      return true;
    }
  }
  return false;
}

struct Line {
  std::string_view text;  // trimmed
  bool indented = false;  // printed under the line before it (a list item)
  bool explains = false;
  bool from_err = false;
};

// The lines of `text` worth showing, in order. A progress bar redrawn with
// '\r' counts as what it last showed. An indented line that follows an
// explaining line ending in ':' explains too: it is that line's list (the
// package after "Errors were encountered while processing:", kubeadm's
// "[ERROR ...]" checks, dnf's problems).
void Collect(std::string_view text, bool from_err, std::vector<Line>& lines) {
  bool list_open = false;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    while (!raw.empty() && (raw.back() == '\r' || raw.back() == ' ' || raw.back() == '\t')) {
      raw.remove_suffix(1);
    }
    if (const auto cr = raw.rfind('\r'); cr != std::string_view::npos) {
      raw.remove_prefix(cr + 1);
    }
    const std::string_view trimmed = Trim(raw);
    if (trimmed.empty() || AnyMatch(kNoise, trimmed)) {
      list_open = false;
      continue;
    }
    Line line{trimmed, raw.front() == ' ' || raw.front() == '\t', false, from_err};
    line.explains = AnyMatch(kExplaining, trimmed) || (list_open && line.indented);
    list_open = line.explains && (trimmed.back() == ':' || (list_open && line.indented));
    lines.push_back(line);
  }
}

void Append(std::string& out, const Line& line) {
  if (!out.empty()) {
    out += '\n';
  }
  std::string_view text = line.text;
  const std::size_t indent = line.indented ? 2 : 0;
  std::string_view cut;
  if (indent + text.size() > kMaxExplainLineLength) {
    std::size_t keep = kMaxExplainLineLength - indent - 3;
    // Never split a UTF-8 sequence: back up over continuation bytes.
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0U) == 0x80U) {
      --keep;
    }
    text = text.substr(0, keep);
    cut = "...";
  }
  out.append(indent, ' ');
  out += text;
  out += cut;
}

}  // namespace

std::string ExplainFailure(const std::string& out, const std::string& err, std::size_t max_lines) {
  std::vector<Line> all;
  Collect(out, false, all);
  Collect(err, true, all);

  // Each line once (the prelude's pkg_explain repeats on stderr what apt
  // printed on stdout), in the order first printed.
  std::vector<Line> explaining;
  std::vector<Line> rest;
  bool err_has_lines = false;
  // Apart per kind: a package name listed as "to be installed" comes back
  // under "Errors were encountered while processing:".
  std::unordered_set<std::string_view> seen_explaining;
  std::unordered_set<std::string_view> seen_rest;
  for (const Line& line : all) {
    auto& seen = line.explains ? seen_explaining : seen_rest;
    if (!seen.insert(line.text).second) {
      continue;
    }
    (line.explains ? explaining : rest).push_back(line);
    err_has_lines = err_has_lines || line.from_err;
  }

  std::vector<Line> chosen;
  if (!explaining.empty()) {
    // The first lines name the cause; the last says how the command ended.
    if (explaining.size() <= max_lines) {
      chosen = explaining;
    } else if (max_lines > 0) {
      chosen.assign(explaining.begin(),
                    explaining.begin() + static_cast<std::ptrdiff_t>(max_lines - 1));
      chosen.push_back(explaining.back());
    }
  } else {
    // Nothing recognised: the last lines, as before, of stderr if it said
    // anything (where a failing command writes), else of stdout.
    std::vector<Line> source;
    for (const Line& line : rest) {
      if (line.from_err == err_has_lines) {
        source.push_back(line);
      }
    }
    const std::size_t skip = source.size() > max_lines ? source.size() - max_lines : 0;
    chosen.assign(source.begin() + static_cast<std::ptrdiff_t>(skip), source.end());
  }

  std::string text;
  for (const Line& line : chosen) {
    Append(text, line);
  }
  return text;
}

}  // namespace gpuctl
