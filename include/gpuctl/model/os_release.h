// OsReleaseFile: what a node says it runs, read from its /etc/os-release
// (os-release(5)), and how that maps onto the inventory's `os` names.
//
// The inventory's `os` decides which change scripts a node gets (apt or dnf),
// so gpuctl reads this file at connect and refuses a node that contradicts
// the inventory instead of running the wrong family's scripts there; `os:
// auto` takes the node's word for it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuctl/model/inventory.h"

namespace gpuctl {

struct OsReleaseFile {
  std::map<std::string, std::string> values;  // every assignment; the last one wins

  // The value of `key`, empty when the file does not set it.
  [[nodiscard]] std::string Get(const std::string& key) const;
  // ID_LIKE's space-separated ids, closest first.
  [[nodiscard]] std::vector<std::string> IdLike() const;
  // How messages name what the node reports: "debian 12 (Debian GNU/Linux 12
  // (bookworm))", i.e. ID, VERSION_ID and PRETTY_NAME (NAME when absent).
  [[nodiscard]] std::string Describe() const;
};

// Parses os-release as its format is documented: newline-separated
// shell-compatible KEY=value assignments, the value optionally in single
// quotes (taken literally) or double quotes (where \ escapes $ ` " \), a
// backslash outside quotes escaping the next character; lines starting with
// '#' and blank lines ignored. No expansion happens. A line that is not an
// assignment (or whose quote never closes) is skipped, as systemd does.
OsReleaseFile ParseOsReleaseFile(std::string_view text);

// The inventory name of what the file describes: ID ubuntu, debian, rocky,
// rhel, almalinux or centos (CentOS Stream when NAME says so) with VERSION_ID
// compared as gpuctl's names are: ubuntu by major.minor ("22.04"), the others
// by major ("9.4" is 9). `error` says why there is none: no ID, a release
// gpuctl does not support (naming what the node reported and, from ID_LIKE,
// what it resembles), or one that is end of life (with its successor).
struct IdentifiedOs {
  std::optional<OsRelease> os;
  std::string error;
};
IdentifiedOs IdentifyOs(const OsReleaseFile& file);

// The OS a node runs, checked against its inventory entry: an `auto` node
// gets what the file identifies; any other gets its declared OS back when
// the file agrees. Otherwise `error` names both sides, e.g. "the inventory
// says rocky-9 but /etc/os-release says debian 12 (Debian GNU/Linux 12
// (bookworm))". ID_LIKE only ever adds a hint to a message: a derivative
// never silently passes for its parent.
IdentifiedOs CheckNodeOs(const OsRelease& declared, const OsReleaseFile& file);

// The script that prints the node's os-release: /etc/os-release, else
// /usr/lib/os-release (the fallback os-release(5) names).
const std::string& OsReleaseScript();

}  // namespace gpuctl
