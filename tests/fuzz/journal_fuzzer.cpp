// The previous run's journal, which `apply` reads to say which changes were in
// flight when it stopped (UnfinishedSteps). A killed run leaves a torn last
// line and a full disk worse, so any bytes must read without throwing.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fuzz_check.h"
#include "gpuctl/run/journal.h"

namespace {

// One file per fuzzing process, rewritten for each input and removed at
// exit; in memory (/dev/shm) where there is one, since a disk write per
// input is most of the time an input takes.
class JournalFile {
 public:
  JournalFile() {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm", ec)
                                          ? std::filesystem::path("/dev/shm")
                                          : std::filesystem::temp_directory_path();
    path_ = (dir / ("gpuctl-fuzz-journal-" + std::to_string(getpid()) + ".jsonl")).string();
  }
  JournalFile(const JournalFile&) = delete;
  JournalFile& operator=(const JournalFile&) = delete;
  ~JournalFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const JournalFile kFile;
  {
    std::ofstream out(kFile.path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    gpuctl::fuzz::Check(static_cast<bool>(out), "the fuzzer can write its journal file");
  }
  (void)gpuctl::UnfinishedSteps(kFile.path());
  return 0;
}
