#include "gpuctl/model/catalog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "catalog_internal.h"
#include "gpuctl/model/repositories.h"
#include "gpuctl/util/digest.h"
#include "gpuctl/util/input_file.h"

namespace gpuctl {

namespace fs = std::filesystem;

namespace {

bool Holds(StepCondition condition, const Node& node, const Inventory& inv) {
  switch (condition) {
    case StepCondition::kAlways:
      return true;
    case StepCondition::kHasGpus:
      return node.GpuCount() > 0;
    case StepCondition::kHasIb:
      return !node.hardware.ib.empty();
    case StepCondition::kNfs:
      return inv.nfs.has_value();
    case StepCondition::kNfsServer:
      return inv.nfs && inv.NfsServer() != nullptr && inv.NfsServer()->name == node.name;
    case StepCondition::kNfsClient:
      return inv.nfs && !inv.nfs->mounts.empty() &&
             (inv.NfsServer() == nullptr || inv.NfsServer()->name != node.name);
    case StepCondition::kKubernetes:
      return inv.orchestrator == Orchestrator::kKubernetes;
    case StepCondition::kSlurm:
      return inv.orchestrator == Orchestrator::kSlurm;
    case StepCondition::kDocker:
      return inv.policy.docker;
    case StepCondition::kRegistryMirrors:
      return !inv.mirrors.registries.empty();
    // The same rule the air-gapped check uses (repositories.h).
    case StepCondition::kDockerRepo:
      return NeedsRepository("docker", inv, node);
    case StepCondition::kEpelRepo:
      return NeedsRepository("epel", inv, node);
    case StepCondition::kHostsFile:
      return inv.network.name_resolution == NameResolution::kHostsFile;
    case StepCondition::kNvswitch:
      return node.OnNvswitch();
    case StepCondition::kMig:
      return node.SetsMig();
    case StepCondition::kFabric:
      return node.OnFabric();
    case StepCondition::kKernelModules:
      return node.GpuCount() > 0 || !node.hardware.ib.empty();
    case StepCondition::kHoldKernel:
      return inv.policy.hold_kernel && Holds(StepCondition::kKernelModules, node, inv);
    case StepCondition::kLeavingNodes:
      return inv.HasLeavingNodes();
    case StepCondition::kResetPackages:
      return inv.reset_packages;
    case StepCondition::kSubnetManager:
      return inv.SubnetManagerPriority(node) > 0;
  }
  return false;
}

// Length-prefixed, so no two different catalogs serialise alike.
void Field(std::string& out, std::string_view name, std::string_view value) {
  out += fmt::format("{} {}\n{}\n", name, value.size(), value);
}

}  // namespace

bool ConditionHolds(StepCondition condition, const Node& node, const Inventory& inventory) {
  return Holds(condition, node, inventory);
}

bool Step::AppliesTo(const Node& node, const Inventory& inventory) const {
  const bool role = std::any_of(roles.begin(), roles.end(), [&](Role r) { return node.Has(r); });
  const bool family = families.empty() || families.count(node.os.family) > 0;
  // A reset step only on the nodes a reset chose; a removal step on every
  // leaving node (those included); any other step only on nodes that stay.
  const bool state = reset ? node.reset : leaving == node.absent;
  return state && role && family && std::all_of(when.begin(), when.end(), [&](StepCondition c) {
           return Holds(c, node, inventory);
         });
}

bool Drain::AppliesTo(const Node& node, const Inventory& inventory) const {
  return std::all_of(when.begin(), when.end(),
                     [&](StepCondition c) { return Holds(c, node, inventory); });
}

const Drain* Catalog::DrainFor(const Node& node, const Inventory& inventory) const {
  for (const Drain& drain : drains_) {
    if (drain.AppliesTo(node, inventory)) {
      return &drain;
    }
  }
  return nullptr;
}

const std::string* Step::ChangeFor(OsFamily family) const {
  auto it = change.find(family);
  return it == change.end() ? nullptr : &it->second;
}

const Step* Catalog::Find(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &steps_[it->second];
}

void Catalog::IndexSteps() {
  by_id_.clear();
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    by_id_.try_emplace(steps_[i].id, i);  // the first of a duplicate id, as the scan found
  }
}

// Covers everything that changes what apply does; not descriptions or file
// positions, so rewording a step does not invalidate saved plans.
std::string Catalog::Digest() const {
  std::string text;
  // The prelude is part of every script a node runs.
  Field(text, "prelude", prelude_);
  for (const auto& s : steps_) {
    Field(text, "id", s.id);
    for (Role r : s.roles) {
      Field(text, "role", ToString(r));
    }
    for (OsFamily f : s.families) {
      Field(text, "os", ToString(f));
    }
    for (StepCondition c : s.when) {
      Field(text, "when", detail::ConditionName(c));
    }
    for (const auto& d : s.depends) {
      Field(text, "depends", d.on_role ? d.step + "@" + ToString(*d.on_role) : d.step);
      if (d.unless) {
        Field(text, "unless", detail::ConditionName(*d.unless));
      }
    }
    for (const auto& p : s.params) {
      Field(text, "param", p);
    }
    for (const auto& p : s.change_params) {
      Field(text, "change_param", p);
    }
    for (const auto& p : s.secrets) {
      Field(text, "secret", p);
    }
    for (const auto& in : s.inputs) {
      Field(text, "input",
            fmt::format("{} from {}{}: {}", in.name, ToString(in.from),
                        in.secret ? " (secret)" : "", in.script));
    }
    Field(text, "probe", s.probe);
    for (const auto& [family, script] : s.change) {
      Field(text, "change-" + ToString(family), script);
    }
    Field(text, "verify", s.verify);
    Field(text, "state", s.reset ? "reset" : (s.leaving ? "absent" : "present"));
    Field(text, "reboot", s.reboot ? "true" : "false");
    Field(text, "deep", s.deep ? "true" : "false");
    Field(text, "restarts", DescribeRestarts(s.restarts));
  }
  for (const auto& d : drains_) {
    for (StepCondition c : d.when) {
      Field(text, "drain-when", detail::ConditionName(c));
    }
    Field(text, "drain-on", ToString(d.on));
    Field(text, "drain-member", d.member);
    Field(text, "drain", d.drain);
    Field(text, "drain-resume", d.resume);
  }
  return ::gpuctl::Digest(text);
}

Catalog Catalog::Select(const std::vector<std::string>& patterns, std::string& error) const {
  std::set<std::string> wanted;
  std::vector<std::string> todo;
  for (const auto& pattern : patterns) {
    bool matched = false;
    for (const Step& s : steps_) {
      if (s.id == pattern || s.id.rfind(pattern + ".", 0) == 0) {
        todo.push_back(s.id);
        matched = true;
      }
    }
    if (!matched) {
      error = fmt::format(
          "--only '{}' matches no step (a step id like k8s.join, or a group "
          "like k8s)",
          pattern);
      return {};
    }
  }
  while (!todo.empty()) {
    const std::string id = todo.back();
    todo.pop_back();
    if (!wanted.insert(id).second) {
      continue;
    }
    if (const Step* s = Find(id)) {
      for (const auto& d : s->depends) {
        todo.push_back(d.step);
      }
    }
  }
  Catalog selected;
  selected.prelude_ = prelude_;
  selected.drains_ = drains_;  // a limited run disrupts nodes all the same
  for (const Step& s : steps_) {
    if (wanted.count(s.id) > 0) {
      selected.steps_.push_back(s);
    }
  }
  selected.IndexSteps();
  return selected;
}

std::optional<Catalog> Catalog::Parse(const std::string& text, const std::string& path,
                                      Diagnostics& diagnostics) {
  Diagnostics found;
  yaml::Source source(path, found);
  Catalog catalog;
  if (auto root = source.Parse(text)) {
    detail::ReadPlaybook(source, *root, catalog.steps_, catalog.drains_);
  }
  catalog.IndexSteps();
  CheckGraph(catalog.steps_, found);
  yaml::AppendInOrder(diagnostics, found);
  if (found.HasErrors()) {
    return std::nullopt;
  }
  return catalog;
}

std::optional<Catalog> Catalog::Load(const std::string& dir, Diagnostics& diagnostics) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    diagnostics.Error({dir, 0, 0}, "playbook directory not found");
    return std::nullopt;
  }
  Diagnostics found;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml") {
      // A directory of a million files (a wrong --playbooks) ends here, not
      // after reading them all.
      if (files.size() == kMaxPlaybookFiles) {
        diagnostics.Error({dir, 0, 0}, fmt::format("more than {} playbooks (*.yaml); gpuctl "
                                                   "reads at most that many from one directory",
                                                   kMaxPlaybookFiles));
        return std::nullopt;
      }
      files.push_back(entry.path());
    } else if (entry.path().extension() == ".yml") {
      found.Warning({entry.path().string(), 0, 0},
                    "ignored: playbooks are read only from *.yaml files");
    }
  }
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  if (files.empty()) {
    found.Error({dir, 0, 0}, "no playbooks (*.yaml) in the playbook directory");
  }
  Catalog catalog;
  // Optional: a catalog whose scripts call no shared helpers needs none.
  if (const fs::path prelude = fs::path(dir) / "prelude.sh"; fs::exists(prelude, ec)) {
    if (auto text = yaml::ReadFile(prelude.string(), kMaxPlaybookBytes, found)) {
      catalog.prelude_ = std::move(*text);
    }
  }
  for (const auto& file : files) {
    yaml::Source source(file.string(), found);
    if (auto text = yaml::ReadFile(file.string(), kMaxPlaybookBytes, found)) {
      if (auto root = source.Parse(*text)) {
        detail::ReadPlaybook(source, *root, catalog.steps_, catalog.drains_);
      }
    }
  }
  catalog.IndexSteps();
  CheckGraph(catalog.steps_, found);
  yaml::AppendInOrder(diagnostics, found);
  if (found.HasErrors()) {
    return std::nullopt;
  }
  return catalog;
}

std::string DefaultPlaybookDir() {
  if (const char* env = std::getenv("GPUCTL_PLAYBOOKS"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed =
        (exe.parent_path() / ".." / "share" / "gpuctl" / "playbooks").lexically_normal();
    if (fs::is_directory(installed, ec)) {
      return installed.string();
    }
  }
  return GPUCTL_SOURCE_DIR "/playbooks";
}

}  // namespace gpuctl
