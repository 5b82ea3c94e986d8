#include "gpuctl/view/node_names.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

namespace gpuctl {
namespace {

struct Numbered {
  std::string prefix;
  std::string digits;  // the trailing number as written (keeps its zero padding)
};

// "gpu07" -> {"gpu", "07"}; a name without a trailing number has no digits.
Numbered Split(const std::string& name) {
  std::size_t start = name.size();
  while (start > 0 && std::isdigit(static_cast<unsigned char>(name[start - 1])) != 0) {
    --start;
  }
  return {name.substr(0, start), name.substr(start)};
}

// "01-03,05" from sorted numbers written `width` wide.
std::string Ranges(std::vector<unsigned long long> numbers, std::size_t width) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) {
      ++j;
    }
    const std::string first = fmt::format("{:0{}}", numbers[i], width);
    out += (out.empty() ? "" : ",") + first;
    if (j > i) {
      out += "-" + fmt::format("{:0{}}", numbers[j], width);
    }
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string CompressNodeNames(const std::vector<std::string>& names) {
  // A prefix whose numbers are zero-padded (gpu01) keeps that width: gpu01
  // to gpu10 are one group. Without padding the width is free: worker1 to
  // worker19 are one group, keyed with width 0.
  std::map<std::string, std::size_t> padded;  // prefix -> width
  for (const std::string& name : names) {
    const Numbered n = Split(name);
    if (n.digits.size() > 1 && n.digits.size() <= 18 && n.digits.front() == '0') {
      padded.try_emplace(n.prefix, n.digits.size());
    }
  }
  // Groups keyed by prefix and width, in the order of their first name.
  std::vector<std::pair<std::string, std::size_t>> order;
  std::map<std::pair<std::string, std::size_t>, std::vector<unsigned long long>> numbers;
  std::vector<std::string> plain;  // by position in `order`: empty for a group
  for (const std::string& name : names) {
    const Numbered n = Split(name);
    // A number too long to hold stays a plain name.
    if (n.digits.empty() || n.digits.size() > 18) {
      order.emplace_back(name, 0);
      plain.push_back(name);
      continue;
    }
    const auto pad = padded.find(n.prefix);
    const std::size_t width =
        pad != padded.end() && pad->second == n.digits.size() ? n.digits.size() : 0;
    // An unpadded number written with a leading zero elsewhere ("7" beside
    // "07") would print differently: its own group keeps it as written.
    const bool leading_zero = n.digits.size() > 1 && n.digits.front() == '0';
    const auto key =
        std::make_pair(n.prefix, width != 0 || !leading_zero ? width : n.digits.size());
    auto& list = numbers[key];
    if (list.empty()) {
      order.push_back(key);
      plain.emplace_back();
    }
    list.push_back(std::stoull(n.digits));
  }
  std::string out;
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::string part;
    if (!plain[i].empty()) {
      part = plain[i];
    } else {
      const auto& list = numbers[order[i]];
      const std::string ranges = Ranges(list, order[i].second);
      part = list.size() == 1 ? order[i].first + ranges : order[i].first + "[" + ranges + "]";
    }
    out += (out.empty() ? "" : ",") + part;
  }
  return out;
}

std::string WithoutName(std::string_view text, std::string_view name, std::string_view with) {
  std::string out;
  if (name.empty()) {
    return std::string(text);
  }
  // Only the whole name: gpu1's lines keep "gpu10" as it is.
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::size_t from = 0;
  for (std::size_t at = text.find(name); at != std::string_view::npos;
       at = text.find(name, at + 1)) {
    const std::size_t end = at + name.size();
    if ((at > 0 && word(text[at - 1]) && word(name.front())) ||
        (end < text.size() && word(text[end]) && word(name.back()))) {
      continue;
    }
    out += text.substr(from, at - from);
    out += with;
    from = end;
    at = end - 1;
  }
  out += text.substr(from);
  return out;
}

}  // namespace gpuctl
