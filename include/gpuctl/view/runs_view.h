// What `gpuctl runs` and `gpuctl logs` print: the runs on record as a table
// (or JSON, format gpuctl.runs/v1), and one run's journal as lines a person
// reads (or the journal's own JSON lines). docs/journal.md has both formats.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpuctl/run/run_history.h"

namespace gpuctl {

// One line per run, oldest first, under a header; "No runs on record" when
// there are none.
void WriteRunsText(std::ostream& out, const std::vector<RunRecord>& runs);
void WriteRunsJson(std::ostream& out, const std::vector<RunRecord>& runs);

// One journal event as `gpuctl logs` shows it (one or more lines, the
// command's output tails indented under it).
std::string LogEventText(const nlohmann::json& event);

}  // namespace gpuctl
