// Every file gpuctl reads from the admin (inventory, playbooks, a saved plan,
// a previous run's journal, an identity file, known_hosts) is opened here, so
// bad input ends fast and the same way everywhere:
//
//   inventory.yaml: error: not a regular file (a character device)
//   inventory.yaml: error: 40 MiB is larger than the 32 MiB gpuctl reads
//
// A file is opened once and the opened file is checked (fstat on the same
// descriptor): what is checked is what is read, with no window between a
// stat and an open. Opening never blocks (a FIFO with no writer would wait
// forever otherwise), and reading stops at the bound even where the size
// fstat gave was wrong (/proc files say 0; a file can grow while read).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gpuctl {

inline constexpr std::uint64_t kMiB = std::uint64_t{1024} * 1024;

// The bounds, and why each is what it is. Sizes measured on inventories made
// by scripts/gen-inventory.sh (docs/reliability.md#bad-input).

// An inventory: a node written out in full (address, os, roles, a GPU block)
// is about 160 bytes, so a 10,000-node inventory is 1.5 MiB and one at the
// node bound below about 16 MiB; 32 MiB leaves room for richer nodes (an IB
// list, comments) at that count. A 1,000,000-node file is refused here,
// before any YAML is parsed.
inline constexpr std::uint64_t kMaxInventoryBytes = 32 * kMiB;
// A playbook (*.yaml) or prelude.sh: the shipped ones are 1-23 KiB each.
inline constexpr std::uint64_t kMaxPlaybookBytes = 16 * kMiB;
// *.yaml files in a playbook directory: the shipped catalog has 14.
inline constexpr std::size_t kMaxPlaybookFiles = 1000;
// Nodes in one inventory: 10x the largest cluster the scale work targets
// (10,000 nodes). Validating 100,000 nodes takes about 10 s and 1 GB.
inline constexpr std::size_t kMaxInventoryNodes = 100000;
// YAML values (scalars, lists, mappings) in one file, counted before the
// tree is built: yaml-cpp keeps about 500 bytes per value, so this caps a
// file's tree near 2 GB however densely it is written ("[:,:,...]" packs 3
// values into 2 bytes: 48 million in 32 MiB). A 100,000-node inventory of
// 160-byte nodes has 1.8 million. Files up to kCountYamlValuesAbove cannot
// hold enough values to matter and are not counted (counting costs a fifth
// of a parse: 0.2 s of 1.0 s for 10,000 nodes).
inline constexpr std::size_t kMaxYamlValues = 4000000;
inline constexpr std::uint64_t kCountYamlValuesAbove = 1 * kMiB;
// A saved plan (JSON): 56 MB for 1,000 nodes of the shipped catalog, 202 MB
// for 2,000. It grows with the square of the node count, because os.hosts
// and os.firewall record every node's address in each node's parameters, so
// this holds about 4,500 nodes; a larger plan would need tens of GB to parse
// and is refused with this message rather than by the OOM killer.
inline constexpr std::uint64_t kMaxSavedPlanBytes = 1024 * kMiB;
// An SSH identity file: a 16384-bit RSA key is under 13 KiB (libssh's own
// limit is 4 MiB).
inline constexpr std::uint64_t kMaxIdentityFileBytes = 1 * kMiB;
// known_hosts: up to three keys a node, hashed names, ~1 KiB a node with an
// RSA key among them; 256 MiB holds 100,000 nodes twice over. It is read a
// line at a time, so this bounds time, not memory.
inline constexpr std::uint64_t kMaxKnownHostsBytes = 256 * kMiB;
// A previous run's journal, read line by line for the steps it left
// unfinished: a few KiB per (node, step) item with output tails, so a
// 10,000-node run can write gigabytes. Memory is one line; this bounds time.
inline constexpr std::uint64_t kMaxJournalBytes = 8192 * kMiB;
// One line of a file read line by line (a journal, known_hosts): longer ones
// are skipped, as a torn line is.
inline constexpr std::size_t kMaxLineBytes = 1 * kMiB;

// "12 MiB", "1.5 MiB", "900 KiB", "10 bytes": how sizes read in messages.
std::string FormatSize(std::uint64_t bytes);

// The whole of `path` if it is a regular file of at most `max_bytes`; else
// nullopt and `why` says why in words that follow "<path>: error: ".
std::optional<std::string> ReadInputFile(const std::string& path, std::uint64_t max_bytes,
                                         std::string& why);

// The first `max_bytes` of `path` (all of it if shorter), if it is a regular
// file: for telling what kind of file it is without reading it all.
std::optional<std::string> ReadInputPrefix(const std::string& path, std::uint64_t max_bytes,
                                           std::string& why);

// Calls `line` for each line of `path` (without its '\n'), if it is a regular
// file of at most `max_bytes`; a line longer than kMaxLineBytes is skipped.
// Memory is one line, whatever the file's size. False and `why` if refused
// (a file that grows past the bound while read stops there).
bool ReadInputLines(const std::string& path, std::uint64_t max_bytes,
                    const std::function<void(std::string_view line)>& line, std::string& why);

// Whether `path` could be read by ReadInputFile: "" if so or if it does not
// exist, else why not. For files a library opens itself (libssh reads
// known_hosts), so a FIFO or /dev/zero given there is refused before the
// library blocks on it.
std::string CheckInputFile(const std::string& path, std::uint64_t max_bytes);

}  // namespace gpuctl
