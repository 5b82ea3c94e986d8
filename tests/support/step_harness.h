// StepHarness: runs one shipped step's probe, verify or change script on this
// machine, the way gpuctl sends it to a node (the prelude first, the step's
// parameters as GPUCTL_<NAME>), but with the node's tools replaced by stubs.
//
// A stub is a small sh script placed first on PATH: it can print a real output
// sample from tests/fixtures/ (nvidia-smi, ibstat, kubectl, sinfo ...) and exit
// with a chosen status. So a unit test asserts what a probe concludes from a
// real tool's output, without a node. Files the script reads on the node
// (/etc/hosts, /proc/swaps ...) can be given too (`File`): the script then
// runs in a private mount namespace where each is bind-mounted over the real
// path (an existing file), or appears through an overlay on the nearest
// directory that exists here (a file that does not). That needs root; a test
// using it skips elsewhere (`CanFakeFiles`).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/diagnostic.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/params.h"
#include "gpuctl/run/prober.h"
#include "gpuctl/util/shell_quote.h"

namespace gpuctl::testing {

// A file's whole content ("" when it cannot be read): what a step wrote.
inline std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text`'s lines in sorted order, each ending in a newline: what tools run
// in parallel print, compared without depending on who finished first.
inline std::string SortedLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  std::string sorted;
  for (const std::string& line : lines) sorted += line + "\n";
  return sorted;
}

struct StepRun {
  int status = -1;
  std::string out;  // stdout, then stderr
};

class StepHarness {
 public:
  // `inventory_yaml` is an inventory's text; the shipped catalog is loaded
  // from the source tree's playbooks/.
  explicit StepHarness(const std::string& inventory_yaml) {
    Diagnostics diagnostics;
    auto catalog = Catalog::Load(GPUCTL_PLAYBOOK_DIR, diagnostics);
    auto inventory = ParseInventory(inventory_yaml, "harness.yaml", diagnostics);
    if (!catalog || !inventory || diagnostics.HasErrors()) {
      throw std::runtime_error("harness inputs do not load");
    }
    catalog_ = std::move(*catalog);
    inventory_ = std::move(*inventory);
    char pattern[] = "/tmp/gpuctl-step-harness-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    std::filesystem::create_directories(dir_ / "bin");
  }
  ~StepHarness() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  StepHarness(const StepHarness&) = delete;
  StepHarness& operator=(const StepHarness&) = delete;

  // Puts `command` on PATH, running `body` (sh) with the caller's arguments.
  void Stub(const std::string& command, const std::string& body) {
    const auto path = dir_ / "bin" / command;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }
  // A stub that prints a fixture file (path under tests/fixtures/) and exits
  // with `status`, whatever its arguments.
  void StubFixture(const std::string& command, const std::string& fixture, int status = 0) {
    StubCat(command, Fixture(fixture), status);
  }
  // A stub that prints `text` and exits with `status`.
  void StubOutput(const std::string& command, const std::string& text, int status = 0) {
    const auto file = dir_ / ("out-" + command);
    std::ofstream(file) << text;
    StubCat(command, file.string(), status);
  }
  // Copies a shared stub from tests/support/stubs/ (e.g. nvidia-smi, which
  // answers queries from a real capture; see the stub's header).
  void UseStub(const std::string& command) {
    const auto to = dir_ / "bin" / command;
    std::filesystem::copy_file(std::string(GPUCTL_FIXTURES_DIR) + "/../support/stubs/" + command,
                               to, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(to, std::filesystem::perms::owner_all);
  }
  // ssh standing in for the nodes a master logs in to (stubs/ssh): each
  // name it is asked to log in to goes to the file `log`; `refused` ("" for
  // none) is refused in OpenSSH's own words.
  void StubSshLogins(const std::string& log, const std::string& refused) {
    UseStub("ssh");
    SetEnv("STUB_SSH_LOG", log);
    SetEnv("STUB_SSH_REFUSE", refused);
  }
  // The script sees `content` at `path` (see the header comment).
  void File(const std::string& path, const std::string& content,
            std::filesystem::perms mode = std::filesystem::perms(0644)) {
    files_[path] = content;
    modes_[path] = mode;
  }
  // Why `File` cannot work here, or empty when it can.
  static std::string CanFakeFiles() {
    if (geteuid() != 0) return "faking a node's files needs root (a private mount namespace)";
    if (std::system("unshare --mount true 2>/dev/null") != 0) return "unshare --mount fails here";
    return "";
  }
  // Extra environment for the script (as the node's own environment would be).
  void SetEnv(const std::string& name, const std::string& value) { extra_env_[name] = value; }

  static std::string Fixture(const std::string& relative) {
    return std::string(GPUCTL_FIXTURES_DIR) + "/" + relative;
  }
  // A fixture's content (for `File`).
  static std::string FixtureText(const std::string& relative) {
    std::ifstream in(Fixture(relative));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The step's probe, to run with `Script` after a set-up of the test's own.
  [[nodiscard]] const std::string& ProbeScript(const std::string& step) const {
    return Get(step).probe;
  }
  // The step's verification (its probe when it has none), for `Script`.
  [[nodiscard]] const std::string& VerifyScript(const std::string& step) const {
    const Step& s = Get(step);
    return s.verify.empty() ? s.probe : s.verify;
  }
  // Whether the step is planned on the node (its roles, family and `when:`).
  bool Applies(const std::string& step_id, const std::string& node_name) const {
    const Node* node = inventory_.Find(node_name);
    if (node == nullptr) throw std::runtime_error("no node " + node_name);
    return Get(step_id).AppliesTo(*node, inventory_);
  }

  StepRun Probe(const std::string& step, const std::string& node) {
    return RunScript(Get(step).probe, step, node);
  }
  StepRun Verify(const std::string& step, const std::string& node) {
    const Step& s = Get(step);
    return RunScript(s.verify.empty() ? s.probe : s.verify, step, node);
  }

  // Runs the step's change for the node's OS family. Whatever the change
  // would do to this machine must be stubbed first.
  StepRun Change(const std::string& step, const std::string& node) {
    const Node* n = inventory_.Find(node);
    if (n == nullptr) throw std::runtime_error("no node " + node);
    const std::string* script = Get(step).ChangeFor(n->os.family);
    if (script == nullptr) throw std::runtime_error("no change for " + node + " in " + step);
    return RunScript(*script, step, node);
  }

  // Runs `script` (after the prelude, with the step's parameters) in a
  // private mount namespace (root only, as `File`), so it may mount what it
  // needs (a full tmpfs, a read-only bind) without touching this machine.
  StepRun Script(const std::string& script, const std::string& step, const std::string& node) {
    namespaced_ = true;
    return RunScript(script, step, node);
  }

  // Runs the script of the step's input `input` as its source node would.
  StepRun Input(const std::string& step, const std::string& input, const std::string& node) {
    for (const StepInput& in : Get(step).inputs) {
      if (in.name == input) return RunScript(in.script, step, node);
    }
    throw std::runtime_error("no input " + input + " in " + step);
  }

  [[nodiscard]] const Catalog& catalog() const { return catalog_; }
  [[nodiscard]] const Inventory& inventory() const { return inventory_; }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

 private:
  void StubCat(const std::string& command, const std::string& file, int status) {
    Stub(command, "cat " + ShellQuote(file) + "\nexit " + std::to_string(status));
  }

  const Step& Get(const std::string& id) const {
    const Step* step = catalog_.Find(id);
    if (step == nullptr) throw std::runtime_error("no step " + id);
    return *step;
  }

  StepRun RunScript(const std::string& script, const std::string& step_id,
                    const std::string& node_name) {
    const Node* node = inventory_.Find(node_name);
    if (node == nullptr) throw std::runtime_error("no node " + node_name);
    const auto script_path = dir_ / "script.sh";
    std::ofstream(script_path) << WithPrelude(catalog_.prelude(), script);
    std::string env =
        "env -i HOME=" + dir_.string() + " PATH=" + (dir_ / "bin").string() +
        ":/usr/sbin:/usr/bin:/sbin:/bin GPUCTL_OS_FAMILY=" + ToString(node->os.family);
    auto values = StepEnvironment(Get(step_id).params, inventory_, *node);
    for (const auto& [k, v] : extra_env_) values[k] = v;
    for (const auto& [k, v] : values) env += " " + k + "=" + ShellQuote(v);
    std::string command = env + " sh " + ShellQuote(script_path.string());
    if (!files_.empty() || namespaced_) command = InNamespace(command);
    StepRun run;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (pipe == nullptr) return run;
    char buffer[4096];
    std::size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.out.append(buffer, n);
    const int raw = pclose(pipe);
    run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return run;
  }

  // `command` in a private mount namespace with the faked files in place.
  std::string InNamespace(const std::string& command) const {
    namespace fs = std::filesystem;
    std::string mounts;
    std::map<std::string, fs::path> covered;  // existing ancestor -> its overlay layer
    int n = 0;
    for (const auto& [path, content] : files_) {
      if (fs::exists(path)) {
        const auto src = dir_ / ("file-" + std::to_string(n++));
        std::ofstream(src) << content;
        fs::permissions(src, modes_.at(path));
        mounts += "mount --bind " + ShellQuote(src.string()) + " " + ShellQuote(path) + " && ";
        continue;
      }
      // The nearest directory that exists here gets an overlay whose upper
      // layer holds the file at the same relative path: nothing is created on
      // this machine, and what the directory holds stays visible.
      fs::path ancestor = fs::path(path).parent_path();
      while (!fs::exists(ancestor)) ancestor = ancestor.parent_path();
      if (ancestor == "/") throw std::runtime_error("cannot fake " + path + " under /");
      auto [it, fresh] =
          covered.try_emplace(ancestor.string(), dir_ / ("layer-" + std::to_string(n++)));
      const fs::path target = it->second / "upper" / fs::path(path).lexically_relative(ancestor);
      fs::create_directories(target.parent_path());
      fs::create_directories(it->second / "work");
      std::ofstream(target) << content;
      fs::permissions(target, modes_.at(path));
      if (fresh) {
        mounts += "mount -t overlay overlay -o " +
                  ShellQuote("lowerdir=" + ancestor.string() +
                             ",upperdir=" + (it->second / "upper").string() +
                             ",workdir=" + (it->second / "work").string()) +
                  " " + ShellQuote(ancestor.string()) + " && ";
      }
    }
    const std::string inner = mounts + "exec " + command;
    return "unshare --mount --propagation private sh -c " + ShellQuote(inner);
  }

  Catalog catalog_;
  Inventory inventory_;
  std::filesystem::path dir_;
  std::map<std::string, std::string> extra_env_;
  std::map<std::string, std::string> files_;  // path on the "node" -> content
  std::map<std::string, std::filesystem::perms> modes_;
  bool namespaced_ = false;
};

}  // namespace gpuctl::testing
