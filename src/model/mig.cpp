#include "gpuctl/model/mig.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

namespace gpuctl {
namespace {

// The shape every seven-slice GPU shares: size class, GI profile id, compute
// and memory slices, most instances, allowed starts. The name's memory part
// is the model's own (memory slices 1, 2, 4, 8 -> MemoryNames).
struct Shape {
  const char* size;
  int id, compute, memory, most;
  std::vector<int> starts;
};
const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> kShapes = {
      {"1g", 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}},
      {"1g+me", 20, 1, 1, 1, {0, 1, 2, 3, 4, 5, 6}},
      {"1g", 15, 1, 2, 4, {0, 2, 4, 6}},
      {"2g", 14, 2, 2, 3, {0, 2, 4}},
      {"3g", 9, 3, 4, 2, {0, 4}},
      {"4g", 5, 4, 4, 1, {0}},
      {"7g", 0, 7, 8, 1, {0}},
  };
  return kShapes;
}

using MemoryNames = std::array<const char*, 4>;  // for 1, 2, 4 and 8 memory slices

std::optional<MemoryNames> MemoryNamesOf(std::string_view model) {
  std::string m(model);
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  if (m.rfind("nvidia ", 0) == 0) {
    m.erase(0, 7);
  }
  auto has = [&](const char* s) { return m.find(s) != std::string::npos; };
  auto starts = [&](const char* s) { return m.rfind(s, 0) == 0; };
  if (starts("a100")) {
    return has("40gb") ? MemoryNames{"5gb", "10gb", "20gb", "40gb"}
                       : MemoryNames{"10gb", "20gb", "40gb", "80gb"};
  }
  if (starts("h100") && (has("nvl") || has("94gb"))) {
    return MemoryNames{"12gb", "24gb", "47gb", "94gb"};
  }
  if (starts("h100") || starts("h800")) {
    return MemoryNames{"10gb", "20gb", "40gb", "80gb"};
  }
  if (starts("h200")) {
    return MemoryNames{"18gb", "35gb", "71gb", "141gb"};
  }
  if (starts("b200")) {
    return MemoryNames{"23gb", "45gb", "90gb", "180gb"};
  }
  return std::nullopt;
}

std::size_t MemoryIndex(int slices) {
  return slices == 1 ? 0U : slices == 2 ? 1U : slices == 4 ? 2U : 3U;
}

// Depth-first over the instances, largest first: each tries its allowed
// starts in order. At most 7 instances of at most 7 starts: small.
bool Place(const std::vector<const MigProfile*>& order, std::size_t next, std::vector<bool>& used,
           std::vector<int>& starts) {
  if (next == order.size()) {
    return true;
  }
  const MigProfile& p = *order[next];
  for (int start : p.starts) {
    const int end = start + p.memory;
    if (end > kMigMemorySlices ||
        std::any_of(used.begin() + start, used.begin() + end, [](bool u) { return u; })) {
      continue;
    }
    std::fill(used.begin() + start, used.begin() + end, true);
    starts[next] = start;
    if (Place(order, next + 1, used, starts)) {
      return true;
    }
    std::fill(used.begin() + start, used.begin() + end, false);
  }
  return false;
}

}  // namespace

std::vector<MigProfile> MigProfiles(std::string_view model) {
  std::vector<MigProfile> out;
  auto names = MemoryNamesOf(model);
  if (!names) {
    return out;
  }
  for (const Shape& s : Shapes()) {
    std::string size = s.size;
    std::string suffix;
    if (auto plus = size.find('+'); plus != std::string::npos) {
      suffix = size.substr(plus);
      size.erase(plus);
    }
    out.push_back({fmt::format("{}.{}{}", size, (*names)[MemoryIndex(s.memory)], suffix), s.id,
                   s.compute, s.memory, s.most, s.starts});
  }
  return out;
}

std::string MigModelsText() {
  return "A100 (40 and 80 GB), H100 (80 GB and NVL), H800, H200, B200";
}

std::optional<std::vector<MigPlacement>> PlaceMig(const std::vector<MigProfile>& profiles,
                                                  const std::vector<std::string>& wanted,
                                                  std::string& why) {
  std::vector<const MigProfile*> order;
  std::map<std::string, int> count;
  int compute = 0;
  for (const std::string& name : wanted) {
    auto it = std::find_if(profiles.begin(), profiles.end(),
                           [&](const MigProfile& p) { return p.name == name; });
    if (it == profiles.end()) {
      why = fmt::format("no MIG profile '{}' on this model", name);
      return std::nullopt;
    }
    if (++count[name] > it->most) {
      why = fmt::format("a GPU holds at most {} {}", it->most, name);
      return std::nullopt;
    }
    compute += it->compute;
    order.push_back(&*it);
  }
  if (compute > kMigComputeSlices) {
    why = fmt::format("they take {} compute slices of the GPU's {}", compute, kMigComputeSlices);
    return std::nullopt;
  }
  std::stable_sort(order.begin(), order.end(), [](const MigProfile* a, const MigProfile* b) {
    return a->memory != b->memory ? a->memory > b->memory : a->compute > b->compute;
  });
  std::vector<bool> used(kMigMemorySlices, false);
  std::vector<int> starts(order.size(), 0);
  if (!Place(order, 0, used, starts)) {
    int memory = 0;
    for (const MigProfile* p : order) {
      memory += p->memory;
    }
    why = memory > kMigMemorySlices
              ? fmt::format("they take {} memory slices of the GPU's {}", memory, kMigMemorySlices)
              : "no placement of the GPU's memory slices holds them all";
    return std::nullopt;
  }
  std::vector<MigPlacement> out;
  for (std::size_t i = 0; i < order.size(); ++i) {
    out.push_back({order[i]->name, starts[i]});
  }
  return out;
}

}  // namespace gpuctl
