// gpuctl init: a commented starter inventory, from flags or (on a terminal)
// from a few questions. What it writes is parsed as `gpuctl validate` would
// before it is written, and is written atomically: a new file appears whole
// or not at all, and an existing one is replaced only with --force.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/model/node_range.h"
#include "gpuctl/model/value_kinds.h"
#include "gpuctl/util/text.h"

namespace gpuctl::cli {
namespace {

namespace fs = std::filesystem;

struct InitOptions {
  std::string file = "inventory.yaml";
  bool force = false;
  std::string cluster = "gpu-cluster";
  std::string master = "head";
  std::string workers;  // "gpu[01-04]", "gpu01,gpu02", "" for none
  std::string os = "ubuntu-22.04";
  std::string addresses;  // "10.0.1.10" (the rest follow), a list, or "" (names)
  std::string user = "root";
  std::string orchestrator = "kubernetes";
  std::string gpus;  // "8" or "8x NVIDIA H100 80GB HBM3"; "" for none
};

// The node names of "gpu[01-04],login1" (node_range.h, as the inventory
// expands them). Sets `error` and returns {} on a malformed range.
std::vector<std::string> ExpandNames(const std::string& text, std::string& error) {
  std::vector<std::string> names;
  for (const std::string& item : SplitPatterns(text)) {
    if (item.empty()) continue;
    const auto expanded = ExpandRange(item, error);
    if (!expanded) return {};
    names.insert(names.end(), expanded->begin(), expanded->end());
    if (names.size() > kMaxRangeNames) {
      error = fmt::format("more than {} nodes", kMaxRangeNames);
      return {};
    }
  }
  return names;
}

// One address per node: a list as long as `count`, or one IPv4 address the
// others follow (10.0.1.10, 10.0.1.11, ...), or none: the names are the
// addresses (DNS or ~/.ssh/config resolves them).
std::optional<std::vector<std::string>> Addresses(const std::string& text,
                                                  const std::vector<std::string>& names,
                                                  std::string& error) {
  if (text.empty()) {
    return names;
  }
  std::vector<std::string> given = SplitPatterns(text);
  std::erase(given, std::string());
  if (given.size() == names.size()) {
    return given;
  }
  in_addr first{};
  if (given.size() != 1 || inet_pton(AF_INET, given.front().c_str(), &first) != 1) {
    error = fmt::format(
        "--addresses: {} given for {} nodes; give one per node, or the master's IPv4 address "
        "for the others to follow",
        given.size(), names.size());
    return std::nullopt;
  }
  const std::uint32_t base = ntohl(first.s_addr);
  if (std::uint64_t{base} + names.size() - 1 > 0xffffffffULL) {
    error = "--addresses: the nodes' addresses would run past 255.255.255.255";
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    in_addr next{};
    next.s_addr = htonl(base + static_cast<std::uint32_t>(i));
    char buffer[INET_ADDRSTRLEN];
    out.emplace_back(inet_ntop(AF_INET, &next, buffer, sizeof buffer));
  }
  return out;
}

// "8" or "8x MODEL" -> count, model (the lab's and most clusters' A100s
// when no model is given: an example to edit).
bool ParseGpus(const std::string& text, int& count, std::string& model) {
  const auto x = text.find('x');
  const std::string number = Trimmed(text.substr(0, x));
  model = x == std::string::npos ? "NVIDIA H100 80GB HBM3" : Trimmed(text.substr(x + 1));
  if (number.empty() || number.size() > 4 ||
      number.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  count = std::stoi(number);
  return count >= 1 && count <= 1024 && GpuModelProblem(model).empty();
}

std::string Quoted(const std::string& text) { return "\"" + text + "\""; }

// The inventory's text, comments and all; `error` when an answer cannot
// make one.
std::optional<std::string> RenderInventory(const InitOptions& o, std::string& error) {
  std::vector<std::string> workers = ExpandNames(o.workers, error);
  if (!error.empty()) {
    return std::nullopt;
  }
  std::vector<std::string> names = {o.master};
  names.insert(names.end(), workers.begin(), workers.end());
  const auto addresses = Addresses(o.addresses, names, error);
  if (!addresses) {
    return std::nullopt;
  }
  int gpu_count = 0;
  std::string gpu_model;
  if (!o.gpus.empty() && !ParseGpus(o.gpus, gpu_count, gpu_model)) {
    error = fmt::format(
        "--gpus '{}': write a count (8) or a count and a model (8x NVIDIA H100 "
        "80GB HBM3)",
        o.gpus);
    return std::nullopt;
  }
  const Versions versions;
  std::string y;
  y += "# gpuctl inventory: the cluster as you want it. Every key, its default and\n"
       "# its checks: docs/inventory.md in gpuctl's sources.\n"
       "# Next: gpuctl validate " +
       fs::path(o.file).filename().string() +
       "   (no node is contacted)\n"
       "#       gpuctl plan " +
       fs::path(o.file).filename().string() +
       "       (read-only probes: what apply would change)\n"
       "# Written by `gpuctl init`.\n\n";
  y += "# Names gpuctl's state directory for this cluster (and Slurm's cluster).\n";
  y += "cluster: " + o.cluster + "\n\n";
  y += "# How gpuctl reaches every node over SSH; a node overrides any key under its\n"
       "# own ssh:. Keys come from the ssh agent, ~/.ssh/id_ed25519 or ~/.ssh/id_rsa.\n";
  y += "ssh:\n  user: " + o.user + "\n";
  if (o.user != "root") {
    y += "  become: true                 # run every command through sudo\n"
         "  # become_password_env: GPUCTL_SUDO_PASSWORD   # if sudo asks for a password\n";
  } else {
    y += "  # become: true               # logging in as another user: run through sudo\n";
  }
  y += "  # identity_file: ~/.ssh/id_ed25519\n"
       "  # jump_host: admin@bastion.example.org\n"
       "  # port: 22\n\n";
  y += "# What runs jobs: kubernetes, slurm or none.\n";
  y += "orchestrator: " + o.orchestrator + "\n\n";
  y += "# The stack every node runs (these are gpuctl's defaults). Quote versions:\n"
       "# other YAML tools read 12.10 as the number 12.1.\n";
  y += "versions:\n";
  y += "  driver_branch: " + Quoted(versions.driver_branch) + "\n";
  y += "  cuda: " + Quoted(versions.cuda) + "\n";
  y += "  # kubernetes: " + Quoted(versions.kubernetes) + "\n";
  y += "  # slurm: \"23.02\"              # default: the OS's own Slurm\n\n";
  y += "# network:\n"
       "#   subnet: 10.0.1.0/24          # management network; limits NFS exports\n"
       "#   ntp_servers: [ntp1.example.org]\n"
       "# nfs:                            # shared storage served by the master\n"
       "#   exports: [{path: /data/shared}]\n"
       "#   mounts: [{export: /data/shared, path: /data/shared}]\n"
       "# policy:\n"
       "#   air_gapped: true             # then name mirrors: and repositories: too\n\n";
  y += "# What every node has unless its entry in nodes: says otherwise.\n";
  std::string line = "# os: one of";
  for (const std::string& name : KnownOsNames()) {
    if (line.size() + name.size() + 2 > 78) {
      y += line + "\n";
      line = "#  ";
    }
    line += " " + name + ",";
  }
  y += line + "\n# or auto (whatever the node's /etc/os-release says).\n";
  // What every worker shares is said once (node_defaults); the master says
  // how it differs. A range of workers whose addresses are a range too is
  // one entry (gpu[01-16] at 10.0.1.[11-26]); others get a line each.
  y += "node_defaults:\n";
  y += "  os: " + o.os + "\n";
  y += "  roles: [worker]\n";
  if (gpu_count > 0) {
    y += "  # What each worker must have; plan and check compare the node to it.\n";
    y += fmt::format("  hardware:\n    gpus: {{model: \"{}\", count: {}}}\n", gpu_model, gpu_count);
    y += "    # ib: [{device: mlx5_0, port: 1, rate: 400}]\n";
  } else {
    y += "  # Expected hardware, which plan and check compare each node with, e.g.\n"
         "  # hardware:\n"
         "  #   gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}\n"
         "  #   ib: [{device: mlx5_0, port: 1, rate: 400}]\n";
  }
  y += "\n# The machines: exactly one master; roles are master, worker, storage. A\n"
       "# range (gpu[01-16]) is as many nodes, its address a range of as many.\n";
  y += "nodes:\n";
  y += "  - name: " + o.master + "\n";
  y += "    address: " + addresses->front() + "\n";
  y += "    roles: [master]          # instead of node_defaults' roles\n";
  if (gpu_count > 0) y += "    hardware: {}             # no GPUs expected here\n";
  std::size_t at = 1;  // index in names/addresses
  for (const std::string& item : SplitPatterns(o.workers)) {
    if (item.empty()) continue;
    std::string ignored;
    const std::size_t count = ExpandRange(item, ignored)->size();
    const std::string& first = (*addresses)[at];
    const std::string& last = (*addresses)[at + count - 1];
    std::string address_range;
    if (IsRange(item) && o.addresses.empty()) {
      address_range = item;  // the names resolve
    } else if (IsRange(item) && SplitPatterns(o.addresses).size() == 1) {
      // Consecutive IPv4 addresses within one /24: a.b.c.[first-last].
      const auto dot = first.rfind('.');
      if (dot != std::string::npos && last.compare(0, dot + 1, first, 0, dot + 1) == 0) {
        address_range = first.substr(0, dot + 1) + "[" + first.substr(dot + 1) + "-" +
                        last.substr(dot + 1) + "]";
      }
    }
    if (!address_range.empty()) {
      y += "  - name: " + item + "\n    address: " + address_range + "\n";
    } else {
      for (std::size_t i = at; i < at + count; ++i) {
        y += "  - {name: " + names[i] + ", address: " + (*addresses)[i] + "}\n";
      }
    }
    at += count;
  }
  return y;
}

// Writes `text` to `path` whole or not at all: a temporary file beside it,
// flushed to disk, then linked in (refusing an existing file) or renamed over
// it (--force).
bool WriteAtomically(const std::string& path, const std::string& text, bool force,
                     std::string& error) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string temp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(temp.data());
  if (fd < 0) {
    error = fmt::format("cannot write in {}: {}", dir.string(), std::strerror(errno));
    return false;
  }
  const mode_t mask = umask(0);
  umask(mask);
  bool ok = fchmod(fd, 0666 & ~mask) == 0;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  const int saved = errno;
  ok = close(fd) == 0 && ok;
  if (!ok) {
    error = fmt::format("cannot write {}: {}", temp, std::strerror(saved));
    unlink(temp.c_str());
    return false;
  }
  if (force) {
    if (rename(temp.c_str(), path.c_str()) != 0) {
      error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
      unlink(temp.c_str());
      return false;
    }
  } else {
    // link() fails if the name exists: no window for another writer between
    // a check and the write.
    const int linked = link(temp.c_str(), path.c_str());
    const int why = errno;
    unlink(temp.c_str());
    if (linked != 0) {
      error =
          why == EEXIST
              ? fmt::format("{} exists; pass --force to replace it, or -f to write another", path)
              : fmt::format("cannot write {}: {}", path, std::strerror(why));
      return false;
    }
  }
  if (const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY); dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return true;
}

// Asks `question` on the terminal until `check` finds no problem in the
// answer (an empty answer takes `value`'s current content). False at EOF.
template <typename Check>
bool Ask(const std::string& question, std::string& value, Check check) {
  for (;;) {
    std::cerr << question << (value.empty() ? "" : " [" + value + "]") << ": " << std::flush;
    std::string line;
    if (!std::getline(std::cin, line)) {
      std::cerr << "\n";
      return false;
    }
    line = Trimmed(line);
    const std::string answer = line.empty() ? value : line;
    if (const std::string problem = check(answer); !problem.empty()) {
      std::cerr << "  " << problem << "\n";
      continue;
    }
    value = answer;
    return true;
  }
}

bool AskAll(InitOptions& o) {
  const auto none = [](const std::string&) { return std::string(); };
  const auto host = [](const std::string& s) {
    return s.empty() ? "a name is needed" : HostNameProblem(s);
  };
  std::cerr << "gpuctl init: a starter inventory in " << o.file
            << " (Enter takes the value in brackets).\n";
  if (o.workers.empty()) o.workers = "gpu[01-04]";
  return Ask("Cluster name", o.cluster,
             [](const std::string& s) { return ClusterNameProblem(s); }) &&
         Ask("Master (head) node's name", o.master, host) &&
         Ask("Workers (a list or a range such as gpu[01-16]; - for none)", o.workers,
             [](const std::string& s) {
               std::string error;
               if (s != "-") (void)ExpandNames(s, error);
               return error;
             }) &&
         Ask("Their OS (" + Join(KnownOsNames()) + ", auto)", o.os,
             [](const std::string& s) {
               return ParseOs(s) ? std::string() : "not an OS gpuctl knows";
             }) &&
         Ask("Master's address, the workers' following it (Enter: the names resolve)", o.addresses,
             none) &&
         Ask("SSH user", o.user, [](const std::string& s) { return UserNameProblem(s); }) &&
         Ask("Orchestrator (kubernetes, slurm, none)", o.orchestrator,
             [](const std::string& s) {
               return s == "kubernetes" || s == "slurm" || s == "none"
                          ? ""
                          : "kubernetes, slurm or none";
             }) &&
         Ask("GPUs per worker (8, or 8x MODEL; Enter: leave out)", o.gpus,
             [](const std::string& s) {
               int count = 0;
               std::string model;
               return s.empty() || ParseGpus(s, count, model) ? "" : "a count, or a count x model";
             });
}

}  // namespace

void SetInitCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "init",
      "Write a commented starter inventory (-f, default inventory.yaml) from the flags, or on a\n"
      "terminal without them by asking. Example:\n"
      "  gpuctl init --master head --workers 'gpu[01-04]' --addresses 10.0.1.10 --os "
      "ubuntu-22.04");
  auto o = std::make_shared<InitOptions>();
  cmd->add_option("-f,--file", o->file, "Inventory file to write")->capture_default_str();
  cmd->add_flag("--force", o->force, "Replace the file if it exists");
  std::vector<CLI::Option*> describing = {
      cmd->add_option("--cluster", o->cluster, "Cluster name")->capture_default_str(),
      cmd->add_option("--master", o->master, "The master node's name")->capture_default_str(),
      cmd->add_option("--workers", o->workers,
                      "Worker names: a comma-separated list, ranges such as gpu[01-16]"),
      cmd->add_option("--os", o->os, "Every node's OS, or auto")
          ->check(CLI::IsMember([] {
            auto names = KnownOsNames();
            names.push_back("auto");
            return names;
          }()))
          ->capture_default_str(),
      cmd->add_option("--addresses", o->addresses,
                      "The master's IPv4 address (the workers' follow it), or one address per "
                      "node, master first; default: the names"),
      cmd->add_option("--user", o->user, "SSH user (not root: through sudo)")
          ->capture_default_str(),
      cmd->add_option("--orchestrator", o->orchestrator, "What runs jobs")
          ->check(CLI::IsMember({"kubernetes", "slurm", "none"}))
          ->capture_default_str(),
      cmd->add_option("--gpus", o->gpus,
                      "GPUs every worker must have: a count (8) or count and model "
                      "('8x NVIDIA H100 80GB HBM3')"),
  };
  cmd->callback([o, describing, &exit_code] {
    bool from_flags = false;
    for (const CLI::Option* option : describing) {
      from_flags = from_flags || option->count() > 0;
    }
    if (!from_flags) {
      if (isatty(STDIN_FILENO) == 0) {
        std::cerr << "gpuctl init: stdin is not a terminal, so there is no one to ask: describe "
                     "the cluster with flags, e.g.\n"
                     "  gpuctl init --master head --workers 'gpu[01-04]' --addresses 10.0.1.10 "
                     "--os ubuntu-22.04\n"
                     "(also --cluster, --user, --orchestrator, --gpus; gpuctl init --help)\n";
        exit_code = kExitError;
        return;
      }
      if (!AskAll(*o)) {
        std::cerr << "gpuctl init: stopped; nothing written\n";
        exit_code = kExitError;
        return;
      }
      if (o->workers == "-") o->workers.clear();
    }
    std::string error;
    const auto text = RenderInventory(*o, error);
    if (!text) {
      std::cerr << "gpuctl init: " << error << "; nothing written\n";
      exit_code = kExitError;
      return;
    }
    // What validate would say, before anything is written: an answer that
    // makes a bad inventory (a name that is not a host name, a Slurm cluster
    // without workers) is named at its line, and no file appears.
    Diagnostics diagnostics;
    const auto inventory = ParseInventory(*text, o->file, diagnostics);
    if (!inventory) {
      std::cerr << diagnostics.Format() << "gpuctl init: the inventory would not validate; "
                << "nothing written\n";
      exit_code = kExitError;
      return;
    }
    if (!WriteAtomically(o->file, *text, o->force, error)) {
      std::cerr << "gpuctl init: " << error << "\n";
      exit_code = kExitError;
      return;
    }
    std::cout << fmt::format("Wrote {} ({} nodes). Next: gpuctl validate {}\n", o->file,
                             inventory->nodes.size(), o->file);
    exit_code = kExitOk;
  });
}

}  // namespace gpuctl::cli
