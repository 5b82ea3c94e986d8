#include "gpuctl/run/step_inputs.h"

#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpuctl/model/params.h"
#include "gpuctl/run/script_runner.h"

namespace gpuctl {

StepInputs::~StepInputs() { Close(); }

void StepInputs::Close() {
  std::lock_guard lock(mutex_);
  sources_.clear();
  cache_.clear();
}

bool StepInputs::Resolve(const Step& step, InputUse use, std::map<std::string, std::string>& env,
                         std::string& why) {
  for (const auto& [name, value] : SecretEnvironment(step.secrets, inventory_)) {
    RedactSecret(value);
    env[name] = value;
  }
  for (const StepInput& input : step.inputs) {
    if (input.secret && use != InputUse::kChange) {
      continue;
    }
    static const std::vector<const Node*> kNone;
    auto held = holders_.find(input.from);
    const auto& sources = held == holders_.end() ? kNone : held->second;
    if (sources.empty()) {
      why = fmt::format("input '{}': no node holds the role {}", input.name, ToString(input.from));
      return false;
    }
    std::string value;
    if (!input.each) {
      if (!Read(*sources.front(), input, value, why)) {
        return false;
      }
    }
    for (std::size_t i = 0; input.each && i < sources.size(); ++i) {
      std::string one;
      if (!Read(*sources[i], input, one, why)) {
        return false;
      }
      std::istringstream lines(one);
      for (std::string line; std::getline(lines, line);) {
        value += fmt::format("{}{} {}", value.empty() ? "" : "\n", sources[i]->name, line);
      }
    }
    env[ExportName(input.name)] = value;
  }
  return true;
}

bool StepInputs::Read(const Node& source, const StepInput& input, std::string& value,
                      std::string& why) {
  if (input.secret) {
    // Never kept. Its script may make what it hands out (the master's munge
    // key on first need), so what was kept from the source may be stale now,
    // even when the script then failed.
    const bool read = Fetch(source, input, value, why);
    SourceChanged(source.name);
    return read;
  }
  const std::string key = source.name + '/' + input.name;
  int changes_before = 0;
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      value = it->second;
      return true;
    }
    changes_before = changes_[source.name];
  }
  if (!Fetch(source, input, value, why)) {
    return false;
  }
  std::lock_guard lock(mutex_);
  if (changes_[source.name] == changes_before) {
    cache_[key] = value;  // unless the source changed while this was read
  }
  return true;
}

void StepInputs::SourceChanged(const std::string& node) {
  std::lock_guard lock(mutex_);
  ++changes_[node];
  const std::string prefix = node + '/';
  for (auto it = cache_.lower_bound(prefix); it != cache_.end() && it->first.starts_with(prefix);) {
    it = cache_.erase(it);
  }
}

bool StepInputs::Fetch(const Node& node, const StepInput& input, std::string& value,
                       std::string& why) {
  std::shared_ptr<Source> source;
  {
    std::lock_guard lock(mutex_);
    auto& slot = sources_[node.name];
    if (!slot) {
      slot = std::make_shared<Source>();
    }
    source = slot;
  }
  std::lock_guard lock(source->mutex);
  const std::map<std::string, std::string> env = {{"GPUCTL_OS_FAMILY", ToString(node.os.family)}};
  CommandResult result;
  // A connection kept from earlier in the run is found dead only when used
  // (the node rebooted since, say): then connect again, once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!source->connection || !source->connection->Alive()) {
      Endpoint endpoint = Endpoint::For(node);
      endpoint.trust_on_first_use = trust_new_host_keys_;
      try {
        source->connection = transport_.Connect(endpoint);
      } catch (const std::exception& e) {
        source->connection.reset();
        why =
            fmt::format("input '{}' from {}: cannot connect: {}", input.name, node.name, e.what());
        return false;
      }
    }
    spdlog::debug("{}: reading input '{}' for a step", node.name, input.name);
    result = ScriptRunner(*source->connection, reporter_, redactor_, prelude_)
                 .RunWithPrelude(input.script, env);
    if (result.exit_status != -1 || source->connection->Alive()) {
      break;
    }
  }
  if (input.secret) {
    // Registered before anything else can see it, even a failure message:
    // the whole value and each long word of it, since a tool may echo just
    // the token out of a join command.
    RedactSecret(result.out);
  }
  if (result.exit_status != 0) {
    const std::string err = redactor_.Apply(Tail(result.err, 1));
    why = fmt::format("input '{}' from {} is not available yet (exit {}){}{}", input.name,
                      node.name, result.exit_status, err.empty() ? "" : ": ", err);
    return false;
  }
  value = Trimmed(result.out);
  return true;
}

void StepInputs::RedactSecret(const std::string& value) {
  // Shorter words are command names and flags; an address with its port is
  // 16 at most for IPv4. Redacting a longer harmless word costs little.
  constexpr std::size_t kSecretWord = 17;
  redactor_.Add(Trimmed(value));
  std::size_t start = 0;
  while (start < value.size()) {
    const std::size_t end = value.find_first_of(" \t\r\n\\", start);
    const std::size_t stop = end == std::string::npos ? value.size() : end;
    if (stop - start >= kSecretWord) {
      redactor_.Add(value.substr(start, stop - start));
    }
    start = stop + 1;
  }
}

}  // namespace gpuctl
