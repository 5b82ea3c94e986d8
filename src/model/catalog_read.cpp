// One playbook file into Steps. Each field is checked on its own here; ids
// and dependencies are checked across every file in catalog_graph.cpp.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "catalog_internal.h"
#include "gpuctl/model/params.h"
#include "gpuctl/model/syntax.h"

namespace gpuctl::detail {

namespace {

using yaml::MapReader;
using yaml::Scalar;

const std::vector<std::string>& StepKeys() {
  static const std::vector<std::string> kKeys = {
      "id",     "description",   "roles",   "os",     "when",     "depends",
      "params", "change_params", "secrets", "inputs", "common",   "probe",
      "change", "verify",        "reboot",  "deep",   "restarts", "state"};
  return kKeys;
}
const std::vector<std::string>& RoleNames() {
  static const std::vector<std::string> kKeys = {"master", "worker", "storage"};
  return kKeys;
}
const std::vector<std::string>& FamilyNames() {
  static const std::vector<std::string> kKeys = {"debian", "rhel"};
  return kKeys;
}

bool IsStepId(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
  });
}

// Whether `script` names the shell variable `variable` (GPUCTL_HOSTS, not
// GPUCTL_HOSTS_SHA256).
bool NamesVariable(const std::string& script, const std::string& variable) {
  for (std::size_t at = script.find(variable); at != std::string::npos;
       at = script.find(variable, at + 1)) {
    const std::size_t end = at + variable.size();
    const bool word_ends =
        end == script.size() ||
        (std::isalnum(static_cast<unsigned char>(script[end])) == 0 && script[end] != '_');
    if (word_ends) {
      return true;
    }
  }
  return false;
}

class StepReader {
 public:
  StepReader(yaml::Source& source, MapReader& m, Step& step)
      : source_(source), m_(m), step_(step) {}

  void Read() {
    m_.Read("deep", step_.deep);
    if (step_.deep) {
      m_.Require({"id", "roles", "probe"});
      for (const char* key : {"change", "common", "reboot", "verify"}) {
        if (m_.Has(key)) {
          source_.Error(m_.KeyWhere(key),
                        fmt::format("a deep validation has no '{}': its probe is the test", key));
        }
      }
    } else {
      m_.Require({"id", "roles", "probe", "change"});
    }
    if (auto id = m_.String("id")) {
      step_.id = id->text;
      if (!IsStepId(id->text)) {
        source_.Error(id->where, fmt::format("invalid step id '{}': use lower-case letters, "
                                             "digits, '.' and '-'",
                                             id->text));
      }
    }
    m_.Read("description", step_.description);
    Roles();
    Families();
    Conditions();
    Depends();
    Names("params", step_.params);
    Names("change_params", step_.change_params);
    Names("secrets", step_.secrets);
    Inputs();
    Script(m_, "probe", step_.probe);
    if (!step_.deep) {
      Change();
    }
    Script(m_, "verify", step_.verify);
    if (!m_.Has("verify")) {
      step_.verify = step_.probe;
    }
    Common();
    ChangeOnly();
    m_.Read("reboot", step_.reboot);
    Restarts();
    State();
  }

 private:
  // `state: absent`: the step undoes the node's membership, and runs only
  // on nodes the inventory marks absent (catalog.h, Step::leaving).
  // `state: reset`: a step of `gpuctl reset` only (Step::reset).
  void State() {
    auto state = m_.String("state");
    if (!state) {
      return;
    }
    if (state->text == "absent") {
      step_.leaving = true;
    } else if (state->text == "reset") {
      step_.reset = true;
    } else if (state->text != "present") {
      source_.Error(state->where,
                    yaml::UnknownName("state", state->text, {"present", "absent", "reset"}));
    }
    if ((step_.leaving || step_.reset) && step_.deep) {
      source_.Error(state->where,
                    "a deep validation checks a cluster's members, not a leaving node");
    }
  }

  void Roles() {
    auto roles = m_.StringList("roles");
    if (!roles) {
      return;
    }
    for (const auto& r : *roles) {
      if (auto role = ParseRole(r.text)) {
        step_.roles.insert(*role);
      } else {
        source_.Error(r.where, yaml::UnknownName("role", r.text, RoleNames()));
      }
    }
    if (roles->empty()) {
      source_.Error(m_.ValueWhere("roles"), "expected at least one of master, worker, storage");
    }
  }

  void Families() {
    auto families = m_.StringList("os");
    if (!families) {
      return;
    }
    for (const auto& f : *families) {
      if (f.text == "debian") {
        step_.families.insert(OsFamily::kDebian);
      } else if (f.text == "rhel") {
        step_.families.insert(OsFamily::kRhel);
      } else {
        source_.Error(f.where, yaml::UnknownName("OS family", f.text, FamilyNames()));
      }
    }
    // An empty set means "every family"; an explicit [] surely did not.
    if (families->empty()) {
      source_.Error(m_.ValueWhere("os"), "expected at least one of debian, rhel");
    }
  }

  void Conditions() {
    for (const auto& c : m_.StringList("when").value_or(std::vector<Scalar>{})) {
      auto it = std::find(ConditionNames().begin(), ConditionNames().end(), c.text);
      if (it == ConditionNames().end()) {
        source_.Error(c.where, yaml::UnknownName("condition", c.text, ConditionNames()));
        continue;
      }
      step_.when.push_back(static_cast<StepCondition>(it - ConditionNames().begin()));
    }
  }

  void Depends() {
    for (const auto& item : m_.List("depends").value_or(std::vector<YAML::Node>{})) {
      const SourceLocation where = source_.Where(item);
      if (item.IsScalar()) {
        step_.depends.push_back({item.Scalar(), std::nullopt, where});
        continue;
      }
      if (!item.IsMap()) {
        source_.Error(
            where, fmt::format("expected a step id or {{step, on}}, got {}", yaml::Describe(item)));
        continue;
      }
      MapReader d(source_, item, {"step", "on", "unless"});
      d.Require({"step"});
      StepDependency dep{"", std::nullopt, d.ValueWhere("step"), std::nullopt};
      d.Read("step", dep.step);
      if (auto on = d.String("on")) {
        dep.on_role = ParseRole(on->text);
        if (!dep.on_role) {
          source_.Error(on->where, yaml::UnknownName("role", on->text, RoleNames()));
        }
      }
      if (auto unless = d.String("unless")) {
        auto it = std::find(ConditionNames().begin(), ConditionNames().end(), unless->text);
        if (it == ConditionNames().end()) {
          source_.Error(unless->where,
                        yaml::UnknownName("condition", unless->text, ConditionNames()));
        } else {
          dep.unless = static_cast<StepCondition>(it - ConditionNames().begin());
        }
      }
      if (!dep.step.empty()) {
        step_.depends.push_back(dep);
      }
    }
  }

  void Names(std::string_view key, std::vector<std::string>& out) {
    for (auto& n : m_.StringList(key).value_or(std::vector<Scalar>{})) {
      if ((key == "params" || key == "change_params") && !IsKnownParameter(n.text)) {
        source_.Error(n.where, yaml::UnknownName("parameter", n.text, KnownParameters()));
      } else if (key == "secrets" && !IsKnownSecret(n.text)) {
        source_.Error(n.where, yaml::UnknownName("secret", n.text, KnownSecrets()));
      }
      out.push_back(std::move(n.text));
    }
  }

  void Inputs() {
    std::vector<std::string> seen;
    for (const auto& item : m_.List("inputs").value_or(std::vector<YAML::Node>{})) {
      MapReader in(source_, item, {"name", "from", "each", "script", "secret"});
      if (!in.ok()) {
        continue;
      }
      in.Require({"name", "script"});
      StepInput input;
      input.where = in.where();
      if (auto name = in.String("name")) {
        input.name = name->text;
        const bool valid =
            !name->text.empty() && std::all_of(name->text.begin(), name->text.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
            });
        if (!valid) {
          source_.Error(name->where, fmt::format("invalid input name '{}': use lower-case "
                                                 "letters, digits and '_'",
                                                 name->text));
        } else if (IsKnownParameter(name->text) || IsKnownSecret(name->text) ||
                   std::find(seen.begin(), seen.end(), name->text) != seen.end()) {
          // Each is exported as GPUCTL_<NAME>: one would hide the other.
          source_.Error(name->where,
                        fmt::format("input '{}' clashes with a parameter, a secret or another "
                                    "input of the same name",
                                    name->text));
        }
        seen.push_back(name->text);
      }
      if (auto from = in.String("from")) {
        if (auto role = ParseRole(from->text)) {
          input.from = *role;
        } else {
          source_.Error(from->where, yaml::UnknownName("role", from->text, RoleNames()));
        }
      }
      Script(in, "script", input.script);
      in.Read("secret", input.secret);
      in.Read("each", input.each);
      if (input.secret && input.each) {
        // A secret is the master's own (a token, a key); one from every node
        // would be a secret per node, which nothing needs.
        source_.Error(
            input.where,
            fmt::format("input '{}': a secret input is read from one node, not each", input.name));
      }
      step_.inputs.push_back(std::move(input));
    }
  }

  void Restarts() {
    for (const auto& r : m_.StringList("restarts").value_or(std::vector<Scalar>{})) {
      if (const std::uint8_t bit = ParseRestart(r.text); bit != 0) {
        step_.restarts |= bit;
      } else {
        source_.Error(r.where, yaml::UnknownName("runtime", r.text, RestartNames()));
      }
    }
    if (step_.deep && step_.restarts != kRestartsNothing) {
      source_.Error(m_.KeyWhere("restarts"), "a deep validation changes nothing to restart");
    }
  }

  // False when absent or not text (the latter reported).
  bool Script(MapReader& m, std::string_view key, std::string& out) {
    auto s = m.String(key);
    if (!s) {
      return false;
    }
    if (s->text.find_first_not_of(" \t\r\n") == std::string::npos) {
      source_.Error(s->where, fmt::format("empty {} script", key));
    }
    out = s->text;
    return true;
  }

  // `common:` goes at the head of the probe, each change and the verify
  // (after verify has defaulted to the probe, so it gets it once), where
  // the prelude's functions are already defined. Nothing after the loader
  // needs to know it exists.
  void Common() {
    if (!Script(m_, "common", step_.common) || step_.common.empty()) {
      return;
    }
    if (step_.common.back() != '\n') {
      step_.common += '\n';
    }
    step_.probe.insert(0, step_.common);
    step_.verify.insert(0, step_.common);
    for (auto& [family, script] : step_.change) {
      script.insert(0, step_.common);
    }
  }

  // change_params go to the change scripts only: a probe or verification
  // that named one would read it empty. Only direct references can be seen
  // here; a prelude function that reads one is the step author's to avoid.
  void ChangeOnly() {
    if (step_.change_params.empty()) {
      return;
    }
    const SourceLocation where = m_.ValueWhere("change_params");
    if (step_.deep) {
      source_.Error(where, "a deep validation has no change to give 'change_params' to");
      return;
    }
    for (const auto& name : step_.change_params) {
      if (std::find(step_.params.begin(), step_.params.end(), name) != step_.params.end()) {
        source_.Error(where, fmt::format("'{}' is in both params and change_params", name));
        continue;
      }
      const std::string variable = ExportName(name);
      for (const auto* script : {&step_.probe, &step_.verify}) {
        if (NamesVariable(*script, variable)) {
          source_.Error(where, fmt::format("the {} reads ${}, but change_params gives '{}' to the "
                                           "change only; list it under params instead",
                                           script == &step_.probe ? "probe" : "verification",
                                           variable, name));
          break;
        }
      }
    }
  }

  void Change() {
    auto change = m_.Map("change", {"apt", "dnf", "any"});
    if (!change) {
      return;
    }
    const std::pair<const char*, OsFamily> keys[] = {{"apt", OsFamily::kDebian},
                                                     {"dnf", OsFamily::kRhel}};
    if (change->Has("any")) {
      for (const auto& [key, family] : keys) {
        if (change->Has(key)) {
          source_.Error(change->KeyWhere(key),
                        fmt::format("'{}' beside 'any': 'any' already covers every family", key));
        }
      }
      if (std::string script; Script(*change, "any", script)) {
        step_.change[OsFamily::kDebian] = script;
        step_.change[OsFamily::kRhel] = script;
      }
      return;
    }
    for (const auto& [key, family] : keys) {
      if (std::string script; Script(*change, key, script)) {
        step_.change[family] = script;
      }
    }
    // A step must be able to change every family it runs on, or apply would
    // find a node it cannot fix.
    for (const auto& [key, family] : keys) {
      const bool runs = step_.families.empty() || step_.families.count(family) > 0;
      if (runs && !change->Has(key)) {
        source_.Error(m_.KeyWhere("change"),
                      fmt::format("change has no '{}' (or 'any') script, but the step runs on "
                                  "{}{}",
                                  key, ToString(family),
                                  step_.families.empty() ? " (no 'os' list: every family)" : ""));
      }
    }
  }

  yaml::Source& source_;
  MapReader& m_;
  Step& step_;
};

// A playbook's `drain:` block: when it applies, where it runs, its three
// scripts (drain.h).
void ReadDrain(yaml::Source& source, const YAML::Node& node, std::vector<Drain>& out) {
  MapReader m(source, node, {"description", "when", "on", "member", "drain", "resume"});
  if (!m.ok()) {
    return;
  }
  m.Require({"when", "on", "member", "drain", "resume"});
  Drain drain;
  drain.file = source.file();
  drain.where = m.where();
  m.Read("description", drain.description);
  for (const auto& c : m.StringList("when").value_or(std::vector<Scalar>{})) {
    auto it = std::find(ConditionNames().begin(), ConditionNames().end(), c.text);
    if (it == ConditionNames().end()) {
      source.Error(c.where, yaml::UnknownName("condition", c.text, ConditionNames()));
      continue;
    }
    drain.when.push_back(static_cast<StepCondition>(it - ConditionNames().begin()));
  }
  if (auto on = m.String("on")) {
    if (auto role = ParseRole(on->text)) {
      drain.on = *role;
    } else {
      source.Error(on->where, yaml::UnknownName("role", on->text, RoleNames()));
    }
  }
  for (const auto& [key, script] : {std::pair<const char*, std::string*>{"member", &drain.member},
                                    {"drain", &drain.drain},
                                    {"resume", &drain.resume}}) {
    if (auto text = m.String(key)) {
      if (text->text.find_first_not_of(" \t\r\n") == std::string::npos) {
        source.Error(text->where, fmt::format("empty {} script", key));
      }
      *script = text->text;
    }
  }
  out.push_back(std::move(drain));
}

}  // namespace

std::string_view ConditionName(StepCondition condition) {
  return ConditionNames()[static_cast<std::size_t>(condition)];
}

const std::vector<std::string>& ConditionNames() {
  // In StepCondition's order.
  static const std::vector<std::string> kNames = {
      "always",        "has_gpus",         "has_ib",         "nfs",
      "nfs_server",    "nfs_client",       "kubernetes",     "slurm",
      "docker",        "registry_mirrors", "docker_repo",    "epel_repo",
      "hosts_file",    "nvswitch",         "kernel_modules", "hold_kernel",
      "leaving_nodes", "reset_packages",   "subnet_manager", "mig",
      "fabric"};
  return kNames;
}

void ReadPlaybook(yaml::Source& source, const YAML::Node& root, std::vector<Step>& out,
                  std::vector<Drain>& drains) {
  MapReader top(source, root, {"steps", "drain"});
  if (!top.ok()) {
    return;
  }
  top.Require({"steps"});
  if (top.Has("drain")) {
    ReadDrain(source, root["drain"], drains);
  }
  for (const auto& item : top.List("steps").value_or(std::vector<YAML::Node>{})) {
    MapReader m(source, item, StepKeys());
    if (!m.ok()) {
      continue;
    }
    Step step;
    step.file = source.file();
    step.where = m.where();
    StepReader(source, m, step).Read();
    out.push_back(std::move(step));
  }
}

}  // namespace gpuctl::detail

namespace gpuctl {

std::string_view ToString(StepCondition condition) { return detail::ConditionName(condition); }

}  // namespace gpuctl
