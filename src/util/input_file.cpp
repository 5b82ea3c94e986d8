#include "gpuctl/util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace gpuctl {
namespace {

// Closes the descriptor however the read ends.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

std::string Kind(mode_t mode) {
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISFIFO(mode)) {
    return "a FIFO";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  return "not a file gpuctl knows";
}

std::string NotRegular(mode_t mode) { return fmt::format("not a regular file ({})", Kind(mode)); }

std::string TooLarge(std::uint64_t size, std::uint64_t max_bytes) {
  std::string have = FormatSize(size);
  std::string limit = FormatSize(max_bytes);
  if (have == limit) {  // just over the bound: rounding would hide the difference
    have = fmt::format("{} bytes", size);
    limit = fmt::format("{} ({} bytes)", limit, max_bytes);
  }
  return fmt::format("{} is larger than the {} gpuctl reads", have, limit);
}

// Opens `path` for reading and checks what was opened: a regular file, and
// (unless size_bound is false) no larger than `max_bytes`. -1 and `why` if
// refused; `open_error` is open(2)'s errno when that is what failed.
int OpenChecked(const std::string& path, std::uint64_t max_bytes, bool size_bound, std::string& why,
                int* open_error = nullptr) {
  // O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise.
  // O_NOCTTY: a terminal device must not become our controlling terminal.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (open_error != nullptr) {
      *open_error = error;
    }
    struct stat st {};
    // A socket cannot be opened (ENXIO); say what it is rather than "No such
    // device or address". Nothing is read, so a stat here races nothing.
    if (error == ENXIO && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      why = NotRegular(st.st_mode);
    } else {
      why = fmt::format("cannot read: {}", std::strerror(error));
    }
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    why = fmt::format("cannot read: {}", std::strerror(errno));
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    why = NotRegular(st.st_mode);
    ::close(fd);
    return -1;
  }
  if (size_bound && static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    why = TooLarge(static_cast<std::uint64_t>(st.st_size), max_bytes);
    ::close(fd);
    return -1;
  }
  // A regular file never blocks, but clear the flag so nothing below has to
  // think about EAGAIN.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// read(2), retried when a signal interrupts it.
ssize_t ReadSome(int fd, char* buffer, std::size_t size) {
  ssize_t n = 0;
  do {
    n = ::read(fd, buffer, size);
  } while (n < 0 && errno == EINTR);
  return n;
}

// Reads at most `limit` bytes into `out`; false with `why` on a read error.
// `more` says whether anything was left after `limit`.
bool ReadUpTo(int fd, std::uint64_t limit, std::string& out, bool& more, std::string& why) {
  std::array<char, 65536> buffer{};
  more = false;
  while (true) {
    const std::uint64_t room = limit - out.size();
    // One byte past the room, to tell "exactly the bound" from "longer".
    const std::size_t want =
        room < buffer.size() ? static_cast<std::size_t>(room) + 1 : buffer.size();
    const ssize_t n = ReadSome(fd, buffer.data(), want);
    if (n < 0) {
      why = fmt::format("cannot read: {}", std::strerror(errno));
      return false;
    }
    if (n == 0) {
      return true;
    }
    const auto got = static_cast<std::uint64_t>(n);
    if (got > room) {
      out.append(buffer.data(), static_cast<std::size_t>(room));
      more = true;
      return true;
    }
    out.append(buffer.data(), static_cast<std::size_t>(got));
  }
}

// Opens and checks `path` (OpenChecked), then reads at most `max_bytes`;
// `more` says whether the file went on past them.
std::optional<std::string> ReadChecked(const std::string& path, std::uint64_t max_bytes,
                                       bool size_bound, bool& more, std::string& why) {
  const Fd fd(OpenChecked(path, max_bytes, size_bound, why));
  if (fd.get() < 0) {
    return std::nullopt;
  }
  std::string text;
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) {
    text.reserve(static_cast<std::size_t>(
        std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), max_bytes)));
  }
  if (!ReadUpTo(fd.get(), max_bytes, text, more, why)) {
    return std::nullopt;
  }
  return text;
}

}  // namespace

std::string FormatSize(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024;
  if (bytes >= kMiB) {
    if (bytes % kMiB == 0 || bytes >= 10 * kMiB) {
      return fmt::format("{} MiB", (bytes + kMiB / 2) / kMiB);
    }
    return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
  }
  if (bytes >= kKiB) {
    return fmt::format("{} KiB", (bytes + kKiB / 2) / kKiB);
  }
  return fmt::format("{} bytes", bytes);
}

std::optional<std::string> ReadInputFile(const std::string& path, std::uint64_t max_bytes,
                                         std::string& why) {
  bool more = false;
  auto text = ReadChecked(path, max_bytes, true, more, why);
  if (text && more) {  // it grew after fstat, or fstat's size was not the truth
    why = fmt::format("more than the {} gpuctl reads", FormatSize(max_bytes));
    return std::nullopt;
  }
  return text;
}

std::optional<std::string> ReadInputPrefix(const std::string& path, std::uint64_t max_bytes,
                                           std::string& why) {
  bool more = false;
  return ReadChecked(path, max_bytes, false, more, why);
}

bool ReadInputLines(const std::string& path, std::uint64_t max_bytes,
                    const std::function<void(std::string_view line)>& line, std::string& why) {
  const Fd fd(OpenChecked(path, max_bytes, true, why));
  if (fd.get() < 0) {
    return false;
  }
  std::array<char, 65536> buffer{};
  std::string pending;    // the line read so far
  bool overlong = false;  // the current line passed kMaxLineBytes: skip to its end
  std::uint64_t total = 0;
  while (true) {
    const ssize_t n = ReadSome(fd.get(), buffer.data(), buffer.size());
    if (n < 0) {
      why = fmt::format("cannot read: {}", std::strerror(errno));
      return false;
    }
    if (n == 0) {
      break;
    }
    total += static_cast<std::uint64_t>(n);
    if (total > max_bytes) {
      why = fmt::format("more than the {} gpuctl reads", FormatSize(max_bytes));
      return false;
    }
    std::string_view chunk(buffer.data(), static_cast<std::size_t>(n));
    while (!chunk.empty()) {
      const std::size_t end = chunk.find('\n');
      const std::string_view piece = chunk.substr(0, end);
      if (!overlong && pending.size() + piece.size() > kMaxLineBytes) {
        overlong = true;
        pending.clear();
        pending.shrink_to_fit();
      }
      if (!overlong) {
        pending.append(piece);
      }
      if (end == std::string_view::npos) {
        break;
      }
      if (!overlong) {
        line(pending);
      }
      pending.clear();
      overlong = false;
      chunk.remove_prefix(end + 1);
    }
  }
  if (!overlong && !pending.empty()) {
    line(pending);  // a last line without '\n' (a torn one, often)
  }
  return true;
}

std::string CheckInputFile(const std::string& path, std::uint64_t max_bytes) {
  std::string why;
  int open_error = 0;
  const Fd fd(OpenChecked(path, max_bytes, true, why, &open_error));
  return open_error == ENOENT ? "" : why;
}

}  // namespace gpuctl
