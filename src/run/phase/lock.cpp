// Lock: one apply at a time per node. rename(2) of a directory is atomic on
// every filesystem, so two runs racing for the same node cannot both win. The lock lives under
// /var/lib (not /run) so it survives the reboots a run itself causes.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpuctl/run/phase.h"

namespace gpuctl {
namespace {

constexpr const char* kTakeScript = R"sh(d=/var/lib/gpuctl
mkdir -p "$d"
if [ "${GPUCTL_BREAK_LOCK:-0}" = 1 ] && [ -d "$d/lock" ]; then
  echo "breaking lock held by: $(cat "$d/lock/holder" 2>/dev/null)" >&2
  rm -rf "$d/lock"
fi
# The lock appears with its holder already inside: built aside, then renamed
# into place (atomic; it fails when a lock with a holder is there), so no one
# ever reads a lock without a holder, not even a run killed halfway.
t="$d/lock.new.$$"
rm -rf "$t"
mkdir "$t" && printf 'run=%s\n%s\n' "$GPUCTL_RUN_ID" "$GPUCTL_HOLDER" >"$t/holder"
if mv -T "$t" "$d/lock" 2>/dev/null; then
  exit 0
fi
rm -rf "$t"
if [ "$(sed -n 's/^run=//p' "$d/lock/holder" 2>/dev/null)" = "$GPUCTL_RUN_ID" ]; then
  exit 0
fi
cat "$d/lock/holder" 2>/dev/null || echo "holder unknown"
exit 1
)sh";

constexpr const char* kReleaseScript = R"sh(d=/var/lib/gpuctl
if [ "$(sed -n 's/^run=//p' "$d/lock/holder" 2>/dev/null)" = "$GPUCTL_RUN_ID" ]; then
  rm -rf "$d/lock"
fi
)sh";

class LockPhase : public Phase {
 public:
  LockPhase(std::string run_id, std::string holder, bool break_lock)
      : run_id_(std::move(run_id)), holder_(std::move(holder)), break_lock_(break_lock) {}

  [[nodiscard]] std::string Title() const override { return "lock"; }

  void Run(RunContext& context) override {
    const auto nodes = context.HealthyNodes();
    ParallelEach(nodes.size(), context.options.concurrency, [&](std::size_t i) {
      const Node& node = *nodes[i];
      Connection* connection = context.ConnectionTo(node.name);
      if (connection == nullptr) {
        return;
      }
      ScriptRunner runner = context.RunnerFor(*connection);
      CommandResult r = runner.Run(Script(kTakeScript, break_lock_));
      if (r.exit_status == 1 && HolderIsGoneFromThisHost(r.out)) {
        // Left by a run on this machine that has exited (it lost the node
        // before it could unlock): no one else can be using it.
        context.reporter.Note(
            node.name, "taking over a lock left by a run that has exited (" + Flatten(r.out) + ")");
        r = runner.Run(Script(kTakeScript, true));
      }
      spdlog::debug("{}: lock script exited {}", node.name, r.exit_status);
      if (r.exit_status == 0 && break_lock_) {
        // The take script says whose lock it broke: the admin asked for it,
        // and should see what was overridden.
        if (const auto at = r.err.find("breaking lock held by: "); at != std::string::npos) {
          context.reporter.Note(node.name, Flatten(r.err.substr(at)));
        }
      }
      std::lock_guard lock(mutex_);
      if (r.exit_status == 0) {
        locked_.push_back(node.name);
        return;
      }
      const std::string holder = r.out.empty() ? r.err : r.out;
      if (r.exit_status == 1) {
        held_by_[Flatten(holder)].push_back(node.name);
      } else {
        other_failures_.emplace_back(node.name, fmt::format("cannot take the lock (exit {}): {}",
                                                            r.exit_status, Flatten(r.err)));
      }
    });
    ReportFailures(context);
  }

  void CleanUp(RunContext& context) override {
    std::vector<std::string> locked;
    {
      std::lock_guard lock(mutex_);
      locked.swap(locked_);
    }
    ParallelEach(locked.size(), context.options.concurrency, [&](std::size_t i) {
      if (Connection* connection = context.ConnectionTo(locked[i])) {
        context.RunnerFor(*connection).Run(Script(kReleaseScript, false));
      }
    });
  }

 private:
  [[nodiscard]] Command Script(const char* text, bool break_lock) const {
    Command c;
    c.script = text;
    c.env = {{"GPUCTL_RUN_ID", run_id_},
             {"GPUCTL_HOLDER", holder_},
             {"GPUCTL_BREAK_LOCK", break_lock ? "1" : "0"}};
    c.timeout = std::chrono::seconds(30);
    return c;
  }

  // Nodes another run holds are said once per holder (a run that holds
  // the whole cluster is one line, not one per node), naming the run and
  // the nodes; each node still fails with the holder in its error.
  void ReportFailures(RunContext& context) {
    std::lock_guard lock(mutex_);
    std::map<std::string, std::size_t> position;
    for (const Node& node : context.inventory.nodes) {
      position.emplace(node.name, position.size());
    }
    for (auto& [holder, nodes] : held_by_) {
      std::sort(nodes.begin(), nodes.end(), [&](const std::string& a, const std::string& b) {
        return position[a] < position[b];
      });
      const std::string error = fmt::format(
          "locked by another apply ({}); if that run is gone, re-run with --break-lock", holder);
      for (const std::string& node : nodes) {
        context.FailNode(node, error);
      }
      std::string said = error;
      if (nodes.size() > 1) {
        std::string names;
        for (const std::string& node : nodes) {
          names += (names.empty() ? "" : ", ") + node;
        }
        said += fmt::format("; that run holds {} nodes: {}", nodes.size(), names);
      }
      context.reporter.NodeFailed(nodes.front(), said);
    }
    for (const auto& [node, error] : other_failures_) {
      context.FailNode(node, error);
      context.reporter.NodeFailed(node, error);
    }
    held_by_.clear();
    other_failures_.clear();
  }

  // The holder line reads "user=U host=H pid=P started=T". A lock from this
  // host whose pid no longer exists is stale for certain; any other needs a
  // person to say so (--break-lock).
  static bool HolderIsGoneFromThisHost(const std::string& holder) {
    const auto field = [&](const std::string& key) {
      const auto at = holder.find(key + "=");
      if (at == std::string::npos) {
        return std::string();
      }
      const auto start = at + key.size() + 1;
      return holder.substr(start, holder.find_first_of(" \n", start) - start);
    };
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    const std::string pid_text = field("pid");
    if (field("host") != host || pid_text.empty() ||
        pid_text.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    return pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
  }

  static std::string Flatten(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
      text.pop_back();
    }
    for (char& c : text) {
      if (c == '\n') {
        c = ' ';
      }
    }
    return text;
  }

  std::string run_id_;
  std::string holder_;
  bool break_lock_;
  std::mutex mutex_;
  std::vector<std::string> locked_;
  std::map<std::string, std::vector<std::string>> held_by_;  // holder -> nodes, inventory order
  std::vector<std::pair<std::string, std::string>> other_failures_;
};

}  // namespace

std::unique_ptr<Phase> MakeLockPhase(std::string run_id, std::string holder, bool break_lock) {
  return std::make_unique<LockPhase>(std::move(run_id), std::move(holder), break_lock);
}

}  // namespace gpuctl
