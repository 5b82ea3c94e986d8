// Ctrl-C during apply: the first SIGINT/SIGTERM asks the executor to start
// nothing new and let steps in flight finish (so no package manager is killed
// holding its lock), to start no reboot, and to stop waiting for nodes that
// are rebooting; a second one ends gpuctl at once.
#pragma once

#include <atomic>

namespace gpuctl::cli {

const std::atomic<bool>& InstallInterruptHandler();

}  // namespace gpuctl::cli
