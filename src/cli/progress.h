// What every command that works on nodes shows on stderr while it runs: the
// live board on a terminal, timestamped plain lines in a pipe, a log or CI
// (view/live_board.h says what each shows).
#pragma once

#include <memory>

#include "cli/commands.h"
#include "gpuctl/action/spec.h"
#include "gpuctl/view/live_board.h"

namespace gpuctl::cli {

// The board lists the nodes `spec`'s run contacts; `show_ok`: list the
// steps found already true as well.
std::unique_ptr<LiveBoard> MakeProgress(const GlobalOptions& global, const Spec& spec,
                                        bool show_ok);

}  // namespace gpuctl::cli
