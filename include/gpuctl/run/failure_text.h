// ExplainFailure: the few lines of a failed command's output that say why it
// failed. A failed step's message used to be its last stderr lines, which on a
// package install were debconf's chatter while dpkg's "error processing
// package", a file conflict or "No space left on device" sat further up, seen
// only in the journal. This picks the lines tools print when they fail (errno
// texts, apt/dpkg/dnf, systemd, kubeadm/helm, curl, gpg, gpuctl's own) and
// drops known noise; with nothing recognised it falls back to the last lines.
#pragma once

#include <cstddef>
#include <string>

namespace gpuctl {

// At most this many characters of one line are kept (a long line is cut and
// ends in "..."), so one line cannot bloat a message.
inline constexpr std::size_t kMaxExplainLineLength = 300;

// The lines of `out` then `err` (a command's stdout and stderr) that explain
// its failure, in the order they were printed, each once, joined by '\n' with
// no trailing newline. At most `max_lines` lines: when more lines explain,
// the first max_lines - 1 (the cause usually comes first) and the last (how
// the command ended). When none do, the last max_lines lines that are not
// noise, of `err` if it has any, else of `out`. Empty when both are empty or
// noise.
std::string ExplainFailure(const std::string& out, const std::string& err, std::size_t max_lines);

}  // namespace gpuctl
