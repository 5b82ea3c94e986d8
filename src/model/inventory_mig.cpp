// hardware.gpus.mig (docs/inventory.md#mig): a MIG layout, read and placed.
//
//   mig:
//     - gpus: all                      # or 3, "0-3", "0,2,4-5"; default all
//       instances: {1g.10gb: 7}        # profile: count
//     - gpus: 6-7
//       instances: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}
//
// A later entry replaces an earlier one for the GPUs it names; a GPU no
// entry names runs without MIG, and `mig: []` turns MIG off everywhere.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "gpuctl/model/mig.h"
#include "inventory_internal.h"

namespace gpuctl::detail {
namespace {

std::optional<int> Index(std::string_view text) {
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// "all", "3", "0-3" or "0,2,4-5" over GPUs 0..count-1: the indices, or a
// problem to report.
std::vector<int> Selected(std::string_view text, int count, std::string& problem) {
  std::vector<int> out;
  if (text == "all") {
    for (int i = 0; i < count; ++i) {
      out.push_back(i);
    }
    return out;
  }
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t dash = part.find('-');
    auto first = Index(part.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : Index(part.substr(dash + 1));
    if (!first || !last || *last < *first) {
      problem = fmt::format(
          "expected 'all', a GPU index, a range such as 0-3, or a comma list of them; got '{}'",
          part);
      return {};
    }
    if (*last >= count) {
      problem = fmt::format("GPU {} is not on this node (hardware.gpus.count is {}: GPUs 0-{})",
                            *last, count, count - 1);
      return {};
    }
    for (int i = *first; i <= *last; ++i) {
      out.push_back(i);
    }
  }
  return out;
}

std::string Names(const std::vector<MigProfile>& profiles) {
  std::string out;
  for (const auto& p : profiles) {
    out += (out.empty() ? "" : ", ") + p.name;
  }
  return out;
}

// One entry's `instances`: profile names, each as often as its count.
std::optional<std::vector<std::string>> Instances(yaml::Source& source, const YAML::Node& map,
                                                  const SourceLocation& where,
                                                  const std::vector<MigProfile>& profiles) {
  if (!map.IsMap()) {
    source.Error(where, fmt::format("expected a mapping of MIG profile to count, got {}",
                                    yaml::Describe(map)));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (const auto& pair : map) {
    const SourceLocation key_where = source.Where(pair.first);
    const std::string name = pair.first.IsScalar() ? pair.first.Scalar() : "";
    auto known = std::find_if(profiles.begin(), profiles.end(),
                              [&](const MigProfile& p) { return p.name == name; });
    if (known == profiles.end()) {
      source.Error(key_where,
                   fmt::format("unknown MIG profile '{}' (this model has: {})",
                               name.empty() ? yaml::Describe(pair.first) : name, Names(profiles)));
      ok = false;
      continue;
    }
    auto count = source.AsInt(pair.second, source.Where(pair.second), 1, kMigComputeSlices);
    if (!count) {
      ok = false;
      continue;
    }
    out.insert(out.end(), static_cast<std::size_t>(*count), name);
  }
  if (!ok) {
    return std::nullopt;
  }
  return out;
}

}  // namespace

void ReadMig(yaml::Source& source, yaml::MapReader& gpus, GpuExpectation& g) {
  auto entries = gpus.List("mig");
  if (!entries) {
    return;  // the wrong type, reported
  }
  const SourceLocation at = gpus.ValueWhere("mig");
  const std::vector<MigProfile> profiles = MigProfiles(g.model);
  if (profiles.empty() && !entries->empty()) {
    source.Error(at, fmt::format("gpuctl knows no MIG profiles for '{}' (it knows MIG on the {})",
                                 g.model, MigModelsText()));
    return;
  }
  std::vector<std::vector<std::string>> wanted(static_cast<std::size_t>(std::max(g.count, 0)));
  std::vector<SourceLocation> from(wanted.size());
  bool ok = true;
  for (const YAML::Node& item : *entries) {
    yaml::MapReader entry(source, item, {"gpus", "instances"});
    if (!entry.ok() || !entry.Require({"instances"})) {
      ok = false;
      continue;
    }
    std::string selector = "all";
    SourceLocation selector_at = entry.where();
    if (auto s = entry.String("gpus")) {
      selector = s->text;
      selector_at = s->where;
    }
    std::string problem;
    std::vector<int> chosen = Selected(selector, g.count, problem);
    if (!problem.empty()) {
      source.Error(selector_at, problem);
      ok = false;
    }
    auto instances =
        Instances(source, *entry.Value("instances"), entry.ValueWhere("instances"), profiles);
    if (!instances) {
      ok = false;
      continue;
    }
    for (int i : chosen) {
      wanted[static_cast<std::size_t>(i)] = *instances;
      from[static_cast<std::size_t>(i)] = entry.ValueWhere("instances");
    }
  }
  if (!ok) {
    return;
  }
  std::vector<std::vector<MigPlacement>> layout(wanted.size());
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    std::string why;
    auto placed = PlaceMig(profiles, wanted[i], why);
    if (!placed) {
      source.Error(from[i], fmt::format("GPU {}: these MIG instances do not fit on one {}: {}", i,
                                        g.model, why));
      return;
    }
    layout[i] = std::move(*placed);
  }
  g.mig = std::move(layout);
}

}  // namespace gpuctl::detail
