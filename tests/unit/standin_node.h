// StandinNode: runs the lab's stand-in tools (lab/standins/*/root/...) straight
// from the source tree against a throwaway "node": a temporary directory that
// serves as the node's root (GPUCTL_LAB_ROOT) and holds its profile
// (GPUCTL_LAB_PROFILE). Nothing is installed; the tools never touch the host.
#pragma once

#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpuctl::testing {

struct RunResult {
  std::string out;
  int status = -1;
};

// Runs a shell command line; stdout only unless the command redirects stderr.
inline RunResult RunShell(const std::string& command) {
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  int raw = pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The stand-ins' interpreter in nodes; a test skips when it is missing.
inline bool HavePython() { return access("/usr/bin/python3", X_OK) == 0; }

inline std::filesystem::path StandinsDir() {
  return std::filesystem::path(GPUCTL_SOURCE_DIR) / "lab" / "standins";
}

inline std::filesystem::path NvidiaFixtures() {
  return std::filesystem::path(GPUCTL_FIXTURES_DIR) / "nvidia-smi" / "h100-80gb-hbm3";
}

class StandinNode {
 public:
  StandinNode() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gpuctl-standin.XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) root_ = pattern;
  }
  ~StandinNode() {
    std::error_code ignored;
    if (!root_.empty()) std::filesystem::remove_all(root_, ignored);
  }
  StandinNode(const StandinNode&) = delete;
  StandinNode& operator=(const StandinNode&) = delete;

  const std::filesystem::path& root() const { return root_; }

  // Writes a file under the node's root ("etc/modprobe.d/x.conf").
  void Write(const std::string& relative, const std::string& text) const {
    std::filesystem::path path = root_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }

  void Profile(const std::string& text) const { Write("etc/gpuctl-lab/profile.env", text); }

  // The NVIDIA driver VERSION installed as its DKMS package leaves it: the
  // module's version file and the module DKMS built for the running kernel
  // (the boot unit loads nothing without it).
  void Driver(const std::string& version) const {
    Write("usr/lib/gpuctl-lab/nvidia/module-version", version + "\n");
    struct utsname u {};
    uname(&u);
    Write(std::string("lib/modules/") + u.release + "/updates/dkms/nvidia.ko",
          "placeholder nvidia " + version + "\n");
  }

  // Runs a tool by its path in the source tree ("nvidia-utils/root/usr/bin/
  // nvidia-smi"), through /usr/bin/python3 or /bin/sh per its first line.
  RunResult Run(const std::string& tool, const std::string& args, bool with_stderr = false) const {
    std::filesystem::path path = StandinsDir() / tool;
    std::string interpreter =
        ReadFile(path).rfind("#!/usr/bin/python3", 0) == 0 ? "/usr/bin/python3" : "/bin/sh";
    std::string python_path =
        (StandinsDir() / "gpuctl-lab-common/root/usr/lib/gpuctl-lab/python").string();
    std::string command =
        "GPUCTL_LAB_ROOT=" + Quote(root_.string()) +
        " GPUCTL_LAB_PROFILE=" + Quote((root_ / "etc/gpuctl-lab/profile.env").string()) +
        " PYTHONPATH=" + Quote(python_path) + " " + interpreter + " " + Quote(path.string()) + " " +
        args + (with_stderr ? " 2>&1" : "");
    return RunShell(command);
  }

 private:
  std::filesystem::path root_;
};

}  // namespace gpuctl::testing
