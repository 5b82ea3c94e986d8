#include "gpuctl/run/probe_batch.h"

#include "gpuctl/util/shell_quote.h"

#include <cctype>
#include <charconv>
#include <random>

#include <fmt/format.h>

namespace gpuctl {
namespace {

// What sscanf's conversions skip before a field (a line holds no newline).
constexpr std::string_view kBlanks = " \t\r\v\f";

// The exit status after an end marker's word, as sscanf's "%d" read it
// (leading blanks, a sign, digits); -1 when there is none.
int ParseStatus(std::string_view rest) {
  const auto at = rest.find_first_not_of(kBlanks);
  if (at == std::string_view::npos) {
    return -1;
  }
  rest.remove_prefix(at);
  if (rest.starts_with('+')) {
    rest.remove_prefix(1);
  }
  int rc = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), rc);
  return ec == std::errc() && end != rest.data() ? rc : -1;
}

// Lines between "@@<nonce> <id> begin" and "@@<nonce> <id> end [rc]".
struct Section {
  std::string text;
  int exit_status = -1;
  bool ended = false;
};

std::map<std::size_t, Section> Sections(const std::string& stream, const std::string& nonce) {
  // Lines are looked at in place: a batch's output is read once, and a copy
  // per line (and sscanf per marker) was most of what splitting it cost.
  std::map<std::size_t, Section> sections;
  const std::string tag = "@@" + nonce + " ";
  const std::string_view all(stream);
  Section* current = nullptr;
  std::size_t start = 0;
  while (start < all.size()) {
    std::size_t end = all.find('\n', start);
    if (end == std::string_view::npos) {
      end = all.size();
    }
    const std::string_view line = all.substr(start, end - start);
    start = end + 1;
    if (line.starts_with(tag)) {
      // "<id> begin" or "<id> end [rc]", as sscanf("%zu %7s %d") read them.
      std::string_view rest = line.substr(tag.size());
      rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(kBlanks)));
      std::size_t id = 0;
      const auto [id_end, id_ec] = std::from_chars(rest.data(), rest.data() + rest.size(), id);
      if (id_ec == std::errc() && id_end != rest.data()) {
        rest.remove_prefix(static_cast<std::size_t>(id_end - rest.data()));
        const auto word_at = rest.find_first_not_of(kBlanks);
        std::string_view word;
        if (word_at != std::string_view::npos) {
          rest.remove_prefix(word_at);
          word = rest.substr(0, std::min<std::size_t>(rest.find_first_of(kBlanks), 7));
          rest.remove_prefix(word.size());
        }
        if (word == "begin") {
          current = &sections[id];
          continue;
        }
        if (word == "end" && current != nullptr) {
          current->ended = true;
          current->exit_status = ParseStatus(rest);
          // The marker is printed after a newline we add, so a probe's last
          // line without one is not glued to it; drop that extra newline.
          if (!current->text.empty() && current->text.back() == '\n') {
            current->text.pop_back();
          }
          current = nullptr;
          continue;
        }
      }
    }
    if (current != nullptr) {
      current->text += line;
      current->text += '\n';
    }
  }
  return sections;
}

}  // namespace

std::string MakeNonce() {
  // Seeded once per thread from the OS: opening the random device for every
  // batch cost more than the rest of building it.
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return fmt::format("gpuctl{:016x}", generator());
}

std::string GatherFactsCall(const std::vector<BatchEntry>& entries) {
  // The OS family the entries share (a node's probes all carry the node's);
  // without one, no facts: the helpers then ask the live system.
  std::string family;
  for (const auto& entry : entries) {
    const auto it = entry.env.find(std::string(kFamilyVariable));
    if (it == entry.env.end() || it->second.empty() || (!family.empty() && it->second != family)) {
      return "";
    }
    family = it->second;
  }
  if (family.empty()) {
    return "";
  }
  return fmt::format("if command -v {0} >/dev/null 2>&1; then {0} {1}; fi\n", kGatherFacts,
                     ShellQuote(family));
}

std::string BuildBatchScript(const std::string& prelude, const std::vector<BatchEntry>& entries,
                             const std::string& nonce) {
  // Appended piece by piece into one string sized up front: a node's batch
  // is built for every node of a run, and a format call per piece was most
  // of its cost.
  std::size_t size = prelude.size() + 256;
  for (const auto& entry : entries) {
    size += entry.script.size() + 192 + 4 * nonce.size();
    for (const auto& [name, value] : entry.env) {
      size += name.size() + value.size() + 16;
    }
  }
  std::string script;
  script.reserve(size);
  script += prelude;
  script += '\n';
  // Once, in the batch's own shell: every entry's subshell sees the facts.
  script += GatherFactsCall(entries);
  for (const auto& entry : entries) {
    const std::string id = std::to_string(entry.id);
    // printf '\n@@<nonce> <id> begin\n'; printf '\n@@<nonce> <id> begin\n' >&2
    const auto marker = [&](const char* word) {
      script += "printf '\\n@@";
      script += nonce;
      script += ' ';
      script += id;
      script += word;
    };
    marker(" begin\\n'; ");
    marker(" begin\\n' >&2\n(\n");
    for (const auto& [name, value] : entry.env) {
      script += EnvAssignment(name, value);
    }
    // Always a newline of its own, so that ParseBatchScript gives back the
    // script exactly (a probe written as a YAML block ends with one).
    script += entry.script;
    script += '\n';
    // ) </dev/null\ngpuctl_rc=$?\nprintf '\n@@<nonce> <id> end %s\n' "$gpuctl_rc"; printf ... >&2
    script += ") </dev/null\ngpuctl_rc=$?\n";
    marker(" end %s\\n' \"$gpuctl_rc\"; ");
    marker(" end\\n' >&2\n");
  }
  return script;
}

std::map<std::size_t, CommandResult> SplitBatchOutput(const std::string& out,
                                                      const std::string& err,
                                                      const std::string& nonce) {
  std::map<std::size_t, CommandResult> results;
  auto outs = Sections(out, nonce);
  auto errs = Sections(err, nonce);
  for (auto& [id, section] : outs) {
    if (!section.ended) {
      continue;
    }
    CommandResult r;
    r.exit_status = section.exit_status;
    r.out = std::move(section.text);
    if (auto it = errs.find(id); it != errs.end()) {
      r.err = std::move(it->second.text);
    }
    results.emplace(id, std::move(r));
  }
  return results;
}

namespace {

// Reads a value as ShellQuote writes it: '...' runs joined by \'.
bool ReadQuoted(const std::string& text, std::size_t& pos, std::string& value) {
  value.clear();
  while (pos < text.size() && text[pos] != '\n') {
    if (text[pos] == '\'') {
      const std::size_t close = text.find('\'', pos + 1);
      if (close == std::string::npos) {
        return false;
      }
      value.append(text, pos + 1, close - pos - 1);
      pos = close + 1;
    } else if (text.compare(pos, 2, "\\'") == 0) {
      value += '\'';
      pos += 2;
    } else {
      return false;
    }
  }
  return true;
}

// The next entry's begin marker from `pos` on: sets `nonce` and `id` and
// returns where the id ends; npos when there is none. `bad`: a marker whose
// id is not digits, as BuildBatchScript prints it, so the script is not one
// of its batches (and must not throw out of the fake transport).
std::size_t NextEntry(const std::string& script, std::size_t pos, std::string& nonce,
                      std::size_t& id, bool& bad) {
  static const std::string kBegin = "printf '\\n@@";
  bad = false;
  pos = script.find(kBegin, pos);
  while (pos != std::string::npos) {
    pos += kBegin.size();
    const std::size_t quote = script.find('\'', pos);
    if (std::string_view(script).substr(pos, quote - pos).find(" begin") != std::string::npos) {
      break;
    }
    pos = script.find(kBegin, pos);  // an end marker's printf
  }
  if (pos == std::string::npos) {
    return pos;
  }
  const std::size_t space = script.find(' ', pos);
  nonce.assign(script, pos, space - pos);
  const char* id_begin = script.data() + space + 1;
  const auto [id_end, ec] = std::from_chars(id_begin, script.data() + script.size(), id);
  if (ec != std::errc() || id_end == id_begin) {
    bad = true;
    return std::string::npos;
  }
  return static_cast<std::size_t>(id_end - script.data());
}

// What follows an entry's script in its batch.
const std::string kEntryEnd = ") </dev/null\ngpuctl_rc=$?\n";

}  // namespace

bool BatchEntryIds(const std::string& script, std::string& nonce, std::vector<std::size_t>& ids) {
  ids.clear();
  bool bad = false;
  std::size_t id = 0;
  std::size_t pos = NextEntry(script, 0, nonce, id, bad);
  while (pos != std::string::npos) {
    ids.push_back(id);
    const std::size_t end = script.find(kEntryEnd, pos);
    if (end == std::string::npos) {
      return false;
    }
    pos = NextEntry(script, end, nonce, id, bad);
  }
  return !bad && !ids.empty();
}

bool ParseBatchScript(const std::string& script, std::string& nonce,
                      std::vector<BatchEntry>& entries) {
  entries.clear();
  bool bad = false;
  BatchEntry entry;
  std::size_t space = NextEntry(script, 0, nonce, entry.id, bad);
  while (space != std::string::npos) {
    std::size_t body = script.find("\n(\n", space);
    if (body == std::string::npos) {
      return false;
    }
    body += 3;
    // EnvAssignment's lines: "export NAME='v'", or "GPUCTL_NAME='v'" (not
    // exported) for a long value; anything else starts the entry's script.
    for (;;) {
      const bool exported = script.compare(body, 7, "export ") == 0;
      const std::size_t start = exported ? body + 7 : body;
      std::size_t eq = start;
      while (eq < script.size() &&
             (std::isalnum(static_cast<unsigned char>(script[eq])) != 0 || script[eq] == '_')) {
        ++eq;
      }
      const bool assignment = eq > start && eq + 1 < script.size() && script[eq] == '=';
      if (exported && !assignment) {
        return false;  // "export" without NAME= on its line
      }
      if (!exported &&
          !(assignment && script.compare(start, 7, "GPUCTL_") == 0 && script[eq + 1] == '\'')) {
        break;
      }
      const std::string name = script.substr(start, eq - start);
      std::size_t value_pos = eq + 1;
      std::string value;
      // An export that ends the script has no newline to step over, and no
      // script or end marker after it.
      if (!ReadQuoted(script, value_pos, value) || value_pos == script.size()) {
        return false;
      }
      entry.env.insert_or_assign(name, std::move(value));
      body = value_pos + 1;
    }
    const std::size_t end = script.find(kEntryEnd, body);
    if (end == std::string::npos) {
      return false;
    }
    entry.script = script.substr(body, end - body);
    if (!entry.script.empty() && entry.script.back() == '\n') {
      entry.script.pop_back();
    }
    entries.push_back(std::move(entry));
    entry = BatchEntry();
    space = NextEntry(script, end, nonce, entry.id, bad);
  }
  if (bad) {
    return false;
  }
  return !entries.empty();
}

void AppendBatchResult(const std::string& nonce, std::size_t id, const CommandResult& result,
                       std::string& out, std::string& err) {
  // "\n@@<nonce> <id> begin\n<text>\n@@<nonce> <id> end[ <rc>]\n", appended in place.
  const std::string tag = "\n@@" + nonce + " " + std::to_string(id);
  const auto append = [&](std::string& to, const std::string& text, const std::string& end) {
    to += tag;
    to += " begin";
    to += '\n';
    to += text;
    to += tag;
    to += end;
  };
  append(out, result.out, " end " + std::to_string(result.exit_status) + "\n");
  append(err, result.err, " end\n");
}

}  // namespace gpuctl
