// ParseBatchScript: the fake transport's reading of a probe batch (unit tests
// answer each probe of a batch on its own through it). It is handed scripts
// gpuctl built, but a test's hand-written script or a future change to the
// batch format must fail as "not a batch", not crash the test binary. Every
// entry it recovers is rebuilt into a batch, which must parse again.
#include "fuzz_check.h"
#include "gpuctl/run/probe_batch.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuctl::fuzz::Check;
  std::string nonce;
  std::vector<gpuctl::BatchEntry> entries;
  if (!gpuctl::ParseBatchScript(gpuctl::fuzz::Text(data, size), nonce, entries)) {
    return 0;
  }
  Check(!entries.empty(), "a batch has entries");
  std::string again_nonce;
  std::vector<gpuctl::BatchEntry> again;
  const std::string rebuilt = gpuctl::BuildBatchScript("", entries, "gpuctlfuzz");
  if (gpuctl::ParseBatchScript(rebuilt, again_nonce, again)) {
    Check(again_nonce == "gpuctlfuzz", "a rebuilt batch keeps its nonce");
  }
  return 0;
}
