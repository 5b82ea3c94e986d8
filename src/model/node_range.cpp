#include "gpuctl/model/node_range.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "gpuctl/model/yaml_source.h"

namespace gpuctl {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One bracket group's contents ("01-16", "1-3,7") as the strings it stands for.
std::optional<std::vector<std::string>> ExpandGroup(std::string_view group, std::string& error) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= group.size()) {
    const std::size_t comma = std::min(group.find(',', start), group.size());
    const std::string_view part = group.substr(start, comma - start);
    start = comma + 1;
    const std::size_t dash = part.find('-');
    const std::string_view lo = part.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
    if (!AllDigits(lo) || !AllDigits(hi) || lo.size() > 9 || hi.size() > 9) {
      error =
          fmt::format("'[{}]': expected numbers such as [01-16] or [1-3,7], got '{}'", group, part);
      return std::nullopt;
    }
    int a = 0;
    int b = 0;
    std::from_chars(lo.data(), lo.data() + lo.size(), a);
    std::from_chars(hi.data(), hi.data() + hi.size(), b);
    if (b < a) {
      error = fmt::format("'[{}]': range {} ends before it starts", group, part);
      return std::nullopt;
    }
    if (static_cast<std::size_t>(b - a) + out.size() >= kMaxRangeNames) {
      error = fmt::format("'[{}]': more than {} names", group, kMaxRangeNames);
      return std::nullopt;
    }
    // Zero padding is the lower bound's: [01-16] -> 01..16, [1-16] -> 1..16.
    const int width = lo.size() > 1 && lo[0] == '0' ? static_cast<int>(lo.size()) : 0;
    for (int i = a; i <= b; ++i) {
      out.push_back(fmt::format("{:0{}}", i, width));
    }
    if (comma == group.size()) {
      break;
    }
  }
  return out;
}

}  // namespace

bool IsRange(std::string_view text) { return text.find('[') != std::string_view::npos; }

std::optional<std::vector<std::string>> ExpandRange(std::string_view pattern, std::string& error) {
  std::vector<std::string> names = {""};
  std::size_t pos = 0;
  while (pos < pattern.size()) {
    const std::size_t open = pattern.find('[', pos);
    const std::string_view text = pattern.substr(pos, open - pos);
    if (text.find(']') != std::string_view::npos) {
      error = fmt::format("'{}': ']' without '['", pattern);
      return std::nullopt;
    }
    for (auto& name : names) {
      name += text;
    }
    if (open == std::string_view::npos) {
      break;
    }
    const std::size_t close = pattern.find(']', open);
    if (close == std::string_view::npos) {
      error = fmt::format("'{}': '[' without ']'", pattern);
      return std::nullopt;
    }
    std::string group_error;
    auto group = ExpandGroup(pattern.substr(open + 1, close - open - 1), group_error);
    if (!group) {
      error = fmt::format("'{}': {}", pattern, group_error);
      return std::nullopt;
    }
    if (names.size() * group->size() > kMaxRangeNames) {
      error = fmt::format("'{}': more than {} names", pattern, kMaxRangeNames);
      return std::nullopt;
    }
    std::vector<std::string> next;
    next.reserve(names.size() * group->size());
    for (const auto& name : names) {
      for (const auto& number : *group) {
        next.push_back(name + number);
      }
    }
    names = std::move(next);
    pos = close + 1;
  }
  return names;
}

std::vector<std::string> SplitPatterns(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[') {
      ++depth;
    } else if (c == ']' && depth > 0) {
      --depth;
    }
    if (c == ',' && depth == 0) {
      if (!current.empty()) {
        out.push_back(std::move(current));
      }
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) {
    out.push_back(std::move(current));
  }
  return out;
}

namespace {

// The names of `nodes` that the patterns in `lists` match; false with
// `error` set when one matches none.
bool Match(const std::vector<std::string>& nodes, const std::set<std::string>& known,
           const std::vector<std::string>& lists, std::string_view option,
           std::set<std::string>& matched, std::string& error) {
  for (const auto& list : lists) {
    for (const auto& pattern : SplitPatterns(list)) {
      std::string range_error;
      auto names = ExpandRange(pattern, range_error);
      if (!names) {
        error = fmt::format("{} {}", option, range_error);
        return false;
      }
      std::size_t found = 0;
      for (const auto& name : *names) {
        if (known.count(name) > 0) {
          matched.insert(name);
          ++found;
        }
      }
      if (found == 0) {
        error = IsRange(pattern)
                    ? fmt::format("{} {}: none of its {} names is a node of the inventory", option,
                                  pattern, names->size())
                    : fmt::format("{} {}: no such node{}", option, pattern,
                                  yaml::DidYouMean(pattern, nodes));
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::optional<std::set<std::string>> SelectNodes(const std::vector<std::string>& nodes,
                                                 const std::vector<std::string>& limit,
                                                 const std::vector<std::string>& exclude,
                                                 std::string& error) {
  const std::set<std::string> known(nodes.begin(), nodes.end());
  std::set<std::string> selected;
  if (limit.empty()) {
    selected = known;
  } else if (!Match(nodes, known, limit, "--limit", selected, error)) {
    return std::nullopt;
  }
  std::set<std::string> excluded;
  if (!Match(nodes, known, exclude, "--exclude", excluded, error)) {
    return std::nullopt;
  }
  for (const auto& name : excluded) {
    selected.erase(name);
  }
  if (selected.empty()) {
    error = "--limit/--exclude leave no node to work on";
    return std::nullopt;
  }
  return selected;
}

}  // namespace gpuctl
