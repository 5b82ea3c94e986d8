#include "gpuctl/run/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace gpuctl {

void ParallelEach(std::size_t count, std::size_t limit,
                  const std::function<void(std::size_t)>& fn) {
  const std::size_t workers = std::min(count, std::max<std::size_t>(limit, 1));
  if (workers <= 1) {
    for (std::size_t i = 0; i < count; ++i) {
      fn(i);
    }
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::jthread> threads;
  threads.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (std::size_t i = next++; i < count; i = next++) {
        fn(i);
      }
    });
  }
}

}  // namespace gpuctl
