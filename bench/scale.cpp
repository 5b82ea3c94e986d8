// gpuctl-bench-scale: how planning and apply scheduling grow with the number
// of nodes, with nothing but gpuctl's own work on the clock. The real
// inventory loader, catalog, plan, pipeline and executor run; the transport
// is FakeTransport, whose nodes answer every command at once. Prints figures;
// asserts nothing (scripts/bench.sh runs it, docs/benchmark.md has results).
//
//   gpuctl-bench-scale plan  INVENTORY [PLAYBOOKS]
//   gpuctl-bench-scale apply INVENTORY [PLAYBOOKS]
//
// plan:  load -> Plan::Build alone -> the plan action (connect, read each
//        node's OS, build, one probe batch per node; every probe says
//        "needs change", as on fresh nodes).
// apply: the apply action: Prepare (as plan, plus node locks), then every
//        change, reboot and verification, each answered at once, each
//        verification passing once its change ran.
// One inventory per process, so the peak RSS printed is that run's own.
// Each figure is wall time, with the CPU time of every thread beside it
// ("cpu"): on a machine shared with other work that moves less than wall.
// GPUCTL_BENCH_CONCURRENCY=N runs N walkers at once instead of gpuctl's
// default (nodes answer at once here, so 64 walkers only contend).
// GPUCTL_BENCH_MEMBERS=1 makes every node a member of a running cluster
// from the start, so each disruptive change drains it first (one member at
// a time, gpuctl's default).
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "gpuctl/action/apply_action.h"
#include "gpuctl/action/read_only.h"
#include "gpuctl/action/spec.h"
#include "gpuctl/model/os_release.h"
#include "gpuctl/run/probe_batch.h"
#include "gpuctl/run/prober.h"
#include "gpuctl/run/script_runner.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// CPU seconds this process has used (user and system, every thread): on a
// shared machine the wall time depends on who else runs; this does less.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double PeakMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
}

// /etc/os-release as each node would print it, for the identify phase.
std::string OsReleaseText(const Node& node) {
  return fmt::format("ID={}\nVERSION_ID=\"{}\"\nNAME=\"{}\"\n", node.os.id, node.os.version,
                     node.os.id);
}

// A step's script told apart from the others by its length and its two
// ends: hashing whole scripts (kilobytes each, 600,000 of them) was most of
// what the fake nodes cost. The map still compares the whole text.
struct ScriptHash {
  std::size_t operator()(const std::string& script) const {
    constexpr std::size_t kEnd = 64;
    const std::string_view text(script);
    const std::hash<std::string_view> hash;
    if (text.size() <= 2 * kEnd) {
      return hash(text);
    }
    return hash(text.substr(0, kEnd)) ^ (hash(text.substr(text.size() - kEnd)) * 31) ^ text.size();
  }
};

// Nodes that keep what their changes did: a step's probe and verification
// pass once its change ran there. Scripts are told apart by their text (the
// prelude travels beside it).
class ConvergingNodes {
 public:
  // Steps and nodes by number, and what ran as one flag per (node, step):
  // the fake nodes' own bookkeeping should not be what the benchmark times.
  // `plan`: the plan the action will build (the same inventory and catalog
  // give the same items, in the same order), so a batch entry's id names
  // its node and step.
  ConvergingNodes(const Spec& spec, const Plan& plan, FakeTransport& transport)
      : transport_(transport) {
    std::size_t index = 0;
    for (const auto& step : spec.catalog.steps()) {
      verdicts_.push_back(!step.verify.empty() && step.verify != step.probe);
      scripts_.emplace(step.probe, index);
      if (!step.verify.empty()) {
        scripts_.emplace(step.verify, index);
      }
      for (const auto& [family, script] : step.change) {
        changes_.emplace(script, index);
      }
      step_index_.emplace(step.id, index);
      ++index;
    }
    steps_ = index;
    // A drain's member question: yes once the step of the drain's own
    // playbook that joins a node to that cluster changed it, as on real
    // nodes (a fresh node is no member, so a fresh apply drains nothing).
    // GPUCTL_BENCH_MEMBERS=1: every node is a member from the start (a
    // running cluster, where each disruptive change waits for the node's
    // turn to be drained).
    const char* members = std::getenv("GPUCTL_BENCH_MEMBERS");
    all_members_ = members != nullptr && std::string_view(members) == "1";
    for (const auto& drain : spec.catalog.drains()) {
      for (const char* join : {"k8s.join", "slurm.node"}) {
        const Step* step = spec.catalog.Find(join);
        if (step != nullptr && step->file == drain.file) {
          members_.emplace(drain.member, step_index_.at(join));
        }
      }
    }
    for (const auto& node : spec.inventory.nodes) {
      nodes_.emplace(node.name, Known{nodes_.size(), OsReleaseText(node)});
    }
    done_.assign(nodes_.size() * steps_, 0);
    items_.reserve(plan.items().size());
    for (const auto& item : plan.items()) {
      items_.push_back({&nodes_.at(item.node), step_index_.at(item.step), item.node});
    }
  }

  // A probe batch, answered by its entries' ids, as Answer would answer
  // each entry (a probe, or a probe then its verification). nullopt: an id
  // this plan does not have on `node` (then each entry is looked at).
  std::optional<CommandResult> AnswerBatch(const std::string& node, const Command& command) {
    std::string nonce;
    std::vector<std::size_t> ids;
    if (!BatchEntryIds(command.script, nonce, ids)) {
      return std::nullopt;
    }
    CommandResult batch;
    batch.exit_status = 0;
    std::lock_guard lock(mutex_);
    for (const std::size_t id : ids) {
      if (id >= items_.size() || items_[id].node != node) {
        return std::nullopt;
      }
      const ItemKey& item = items_[id];
      CommandResult r;
      r.exit_status = 0;
      if (done_[item.known->index * steps_ + item.step] == 0) {
        r.exit_status = kProbeNeedsChange;
      } else if (verdicts_[item.step]) {
        r = VerdictResult(r, r);
      }
      AppendBatchResult(nonce, id, r, batch.out, batch.err);
    }
    return batch;
  }

  std::optional<CommandResult> Answer(const std::string& node, const Command& command) {
    CommandResult r;
    r.exit_status = 0;
    const Known& known = nodes_.at(node);
    if (command.script == OsReleaseScript()) {
      r.out = known.os_release;
      return r;
    }
    // The prelude travels beside the script (Command::prelude).
    const std::string& own = command.script;
    if (auto it = changes_.find(own); it != changes_.end()) {
      std::lock_guard lock(mutex_);
      done_[known.index * steps_ + it->second] = 1;
      return r;
    }
    if (auto it = scripts_.find(own); it != scripts_.end()) {
      std::lock_guard lock(mutex_);
      r.exit_status = done_[known.index * steps_ + it->second] != 0 ? 0 : kProbeNeedsChange;
      return r;
    }
    if (auto it = members_.find(own); it != members_.end()) {
      std::lock_guard lock(mutex_);
      const bool joined = done_[known.index * steps_ + it->second] != 0;
      r.exit_status = all_members_ || joined ? 0 : 1;
      return r;
    }
    if (own.find("systemctl reboot") != std::string::npos) {
      transport_.Restart(node);  // back at once, its /run emptied
    }
    return r;  // gpuctl's own bookkeeping (locks, reboot marks): succeeds
  }

 private:
  struct Known {
    std::size_t index;
    std::string os_release;
  };
  struct ItemKey {
    const Known* known;
    std::size_t step;
    std::string node;
  };
  FakeTransport& transport_;
  std::vector<ItemKey> items_;  // by plan item id
  std::vector<bool> verdicts_;  // by step: a probe then a verification
  // probe or verification -> step; change -> step; step id -> step;
  // member question -> joining step
  std::unordered_map<std::string, std::size_t, ScriptHash> scripts_;
  std::unordered_map<std::string, std::size_t, ScriptHash> changes_;
  std::unordered_map<std::string, std::size_t> step_index_;
  std::unordered_map<std::string, std::size_t, ScriptHash> members_;
  std::unordered_map<std::string, Known> nodes_;
  std::size_t steps_ = 0;
  bool all_members_ = false;
  std::mutex mutex_;
  std::vector<char> done_;  // [node * steps_ + step]: its change ran there
};

int Run(const std::string& mode, const std::string& inventory, const std::string& playbooks) {
  auto start = Clock::now();
  SpecOptions spec_options;
  spec_options.playbooks = playbooks;
  std::ostringstream diagnostics;
  auto spec = LoadSpec(inventory, spec_options, diagnostics);
  if (!spec) {
    std::cerr << diagnostics.str();
    return 1;
  }
  const double load = Seconds(start);

  FakeTransport transport;
  transport.KeepRecords(false);  // a record of every command would be the benchmark
  double build = 0;
  std::size_t items = 0;
  std::shared_ptr<ConvergingNodes> nodes;
  {
    // Gone before the action starts, so the peak is the action's own.
    start = Clock::now();
    const Plan plan = Plan::Build(spec->inventory, spec->catalog);
    build = Seconds(start);
    items = plan.items().size();
    nodes = std::make_shared<ConvergingNodes>(*spec, plan, transport);
  }
  if (mode == "plan") {
    // Fresh nodes: every probe says "needs change", with no lookup to pay.
    transport.AddHandler(
        [nodes](const std::string& node, const Command& c) -> std::optional<CommandResult> {
          if (c.script == OsReleaseScript()) {
            return nodes->Answer(node, c);
          }
          CommandResult r;
          r.exit_status = kProbeNeedsChange;
          return r;
        });
  } else {
    transport.AddHandler(
        [nodes](const std::string& node, const Command& c) { return nodes->Answer(node, c); });
    transport.SetBatchHandler(
        [nodes](const std::string& node, const Command& c) { return nodes->AnswerBatch(node, c); });
  }
  Reporter quiet;
  RunOptions run;
  // GPUCTL_BENCH_CONCURRENCY: walkers at once (gpuctl's --concurrency),
  // to tell the executor's own work from its threads' contention.
  if (const char* walkers = std::getenv("GPUCTL_BENCH_CONCURRENCY"); walkers != nullptr) {
    run.concurrency = std::stoul(walkers);
  }

  start = Clock::now();
  const double cpu_start = CpuSeconds();
  std::string outcome;
  if (mode == "plan") {
    const ReadOnlyResult result = PlanAction(*spec, transport, quiet, run);
    outcome = result.plan.Summarize().Line();
  } else {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / fmt::format("gpuctl-bench-{}", getpid());
    ApplyTarget target;
    target.path = target.inventory_path = inventory;
    ApplySettings settings;
    settings.run = run;
    settings.run_dir = dir.string();
    {
      ApplyAction action(*spec, target, transport, quiet, settings);
      // Each part's wall time, and its CPU time (every thread's) beside it.
      auto phase = Clock::now();
      double phase_cpu = CpuSeconds();
      const auto part = [&](const char* name) {
        const std::string text =
            fmt::format("{} {:.2f} s (cpu {:.2f})", name, Seconds(phase), CpuSeconds() - phase_cpu);
        phase = Clock::now();
        phase_cpu = CpuSeconds();
        return text;
      };
      if (!action.Prepare().drift.empty()) {
        std::cerr << "drift in a fresh plan\n";
        return 1;
      }
      const std::string prepare = part("prepare");
      action.Apply();
      const std::string changes = part("changes");
      action.Finish();
      const std::string finish = part("finish");
      outcome =
          fmt::format("{}, {}, {}; {}", prepare, changes, finish, action.plan().Summarize().Line());
    }
    std::filesystem::remove_all(dir);
  }
  const double action = Seconds(start);
  const double action_cpu = CpuSeconds() - cpu_start;
  fmt::print(
      "{:>6} nodes {:>7} items  load {:6.2f} s  build {:6.2f} s  {} {:6.2f} s (cpu {:.2f} s)  "
      "peak {:7.1f} MiB  ({})\n",
      spec->inventory.nodes.size(), items, load, build, mode, action, action_cpu, PeakMiB(),
      outcome);
  return 0;
}

}  // namespace
}  // namespace gpuctl

int main(int argc, char** argv) {
  if (argc < 3 || (std::string(argv[1]) != "plan" && std::string(argv[1]) != "apply")) {
    std::cerr << "usage: gpuctl-bench-scale plan|apply INVENTORY [PLAYBOOKS]\n";
    return 2;
  }
  return gpuctl::Run(argv[1], argv[2], argc > 3 ? argv[3] : GPUCTL_SOURCE_DIR "/playbooks");
}
