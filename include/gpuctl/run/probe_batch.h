// ProbeBatch: many read-only scripts in one command. A node's probes are
// independent and short, so sending them as one script over one channel
// saves a session round trip (and an sshd fork) per probe: on a 100-node
// plan that is most of the time spent. Each script runs in its own subshell
// with its own environment and stdin from /dev/null, so one probe's `exit`
// or a stray `read` cannot touch the next; markers with a per-batch nonce
// split the output back into one CommandResult per script.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuctl/transport/transport.h"

namespace gpuctl {

struct BatchEntry {
  std::size_t id = 0;  // caller's key (a plan item id)
  std::string script;
  std::map<std::string, std::string> env;
};

// The prelude function a batch calls once, after the prelude and before the
// entries, when the prelude defines it: it gathers what the probes would
// otherwise each ask the node for (packages, service states, ...) into shell
// variables every entry's subshell inherits (docs/playbooks.md#facts). Its
// argument is the entries' GPUCTL_OS_FAMILY.
inline constexpr std::string_view kGatherFacts = "gpuctl_gather_facts";
inline constexpr std::string_view kFamilyVariable = "GPUCTL_OS_FAMILY";

// The line that calls kGatherFacts with the family every entry's environment
// gives, guarded by `command -v` (a prelude without it runs as before); empty
// when the entries do not agree on one family.
std::string GatherFactsCall(const std::vector<BatchEntry>& entries);

// The one script that runs every entry in order after `prelude` and the
// gather call (GatherFactsCall).
std::string BuildBatchScript(const std::string& prelude, const std::vector<BatchEntry>& entries,
                             const std::string& nonce);

// Splits what the batch printed. An entry whose end marker never came (the
// connection dropped, the batch timed out) is absent from the result.
std::map<std::size_t, CommandResult> SplitBatchOutput(const std::string& out,
                                                      const std::string& err,
                                                      const std::string& nonce);

// The inverse of BuildBatchScript: recovers the entries (and nonce) from a
// batch script, so the fake transport can answer each entry on its own the
// way a node's shell would. Returns false if `script` is not a batch.
bool ParseBatchScript(const std::string& script, std::string& nonce,
                      std::vector<BatchEntry>& entries);

// The ids (and nonce) of a batch's entries, without taking their scripts
// and environments apart: for fake nodes that know each id's step (the
// scale benchmark). Returns false if `script` is not a batch.
bool BatchEntryIds(const std::string& script, std::string& nonce, std::vector<std::size_t>& ids);

// Wraps one entry's result in the batch's markers, as the node's shell would
// print them (for the fake transport).
void AppendBatchResult(const std::string& nonce, std::size_t id, const CommandResult& result,
                       std::string& out, std::string& err);

// A marker nonce unlikely to appear in any probe's output.
std::string MakeNonce();

}  // namespace gpuctl
