// ParallelEach: run a function for every element with at most `limit` running
// at once. Nodes are independent and mostly wait on the network, so threads
// (not cores) bound the parallelism; the limit keeps a 1000-node run from
// opening 1000 SSH handshakes at the same instant.
#pragma once

#include <cstddef>
#include <functional>

namespace gpuctl {

// Calls fn(i) for i in [0, count) on up to `limit` threads and returns when all
// are done. fn must not throw: callers record per-node failures themselves.
void ParallelEach(std::size_t count, std::size_t limit, const std::function<void(std::size_t)>& fn);

// Default concurrency: enough to keep 100 nodes' probes in flight on a small
// admin host without exhausting file descriptors.
inline constexpr std::size_t kDefaultConcurrency = 64;

}  // namespace gpuctl
