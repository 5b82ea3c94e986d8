// spdlog makes its registry (and the default logger) on first use. In a test
// binary that first use can be two of gpuctl's own threads at once (the lock
// phase's walkers log a node's lock result), and the library's thread-safe
// static initialisation is not instrumented, so ThreadSanitizer reports the
// two as a data race (it did once, in CI). Made here, during static
// initialisation on the main thread, it exists before any test starts a
// thread, as it does in gpuctl itself (src/cli/main.cpp sets its logger
// before any phase runs).
#include <spdlog/spdlog.h>

namespace {

[[maybe_unused]] spdlog::logger* const kDefaultLoggerMadeFirst = spdlog::default_logger_raw();

}  // namespace
