#include "cli/interrupt.h"

#include <unistd.h>
#include <csignal>
#include <cstring>

namespace gpuctl::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void OnInterrupt(int signal_number) {
  if (g_interrupted.exchange(true)) {
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
    return;
  }
  constexpr const char kMessage[] =
      "\ngpuctl: interrupted; letting steps in flight finish, cancelling reboots not yet "
      "started (Ctrl-C again to stop now)\n";
  // write(2) is async-signal-safe; iostreams are not.
  [[maybe_unused]] const auto ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
}

}  // namespace

const std::atomic<bool>& InstallInterruptHandler() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  return g_interrupted;
}

}  // namespace gpuctl::cli
