#include "gpuctl/run/probe_batch.h"

#include "gpuctl/util/shell_quote.h"

#include <cctype>
#include <charconv>
#include <random>

#include <fmt/format.h>

namespace gpuctl {
namespace {

// Lines between "@@<nonce> <id> begin" and "@@<nonce> <id> end [rc]".
struct Section {
  std::string text;
  int exit_status = -1;
  bool ended = false;
};

std::map<std::size_t, Section> Sections(const std::string& stream, const std::string& nonce) {
  std::map<std::size_t, Section> sections;
  const std::string tag = "@@" + nonce + " ";
  Section* current = nullptr;
  std::size_t start = 0;
  while (start < stream.size()) {
    std::size_t end = stream.find('\n', start);
    if (end == std::string::npos) {
      end = stream.size();
    }
    const std::string line = stream.substr(start, end - start);
    start = end + 1;
    if (line.rfind(tag, 0) == 0) {
      std::size_t id = 0;
      char word[8] = {};
      int rc = -1;
      const int fields = std::sscanf(line.c_str() + tag.size(), "%zu %7s %d", &id, word, &rc);
      if (fields >= 2 && std::string(word) == "begin") {
        current = &sections[id];
        continue;
      }
      if (fields >= 2 && std::string(word) == "end" && current != nullptr) {
        current->ended = true;
        current->exit_status = fields == 3 ? rc : -1;
        // The marker is printed after a newline we add, so a probe's last
        // line without one is not glued to it; drop that extra newline.
        if (!current->text.empty() && current->text.back() == '\n') {
          current->text.pop_back();
        }
        current = nullptr;
        continue;
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
  std::string script = prelude + "\n";
  // Once, in the batch's own shell: every entry's subshell sees the facts.
  script += GatherFactsCall(entries);
  for (const auto& entry : entries) {
    script += fmt::format("printf '\\n@@{0} {1} begin\\n'; printf '\\n@@{0} {1} begin\\n' >&2\n(\n",
                          nonce, entry.id);
    for (const auto& [name, value] : entry.env) {
      script += EnvAssignment(name, value);
    }
    script += entry.script;
    if (!entry.script.empty() && entry.script.back() != '\n') {
      script += '\n';
    }
    script += fmt::format(
        ") </dev/null\ngpuctl_rc=$?\nprintf '\\n@@{0} {1} end %s\\n' \"$gpuctl_rc\"; "
        "printf '\\n@@{0} {1} end\\n' >&2\n",
        nonce, entry.id);
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
      value += text.substr(pos + 1, close - pos - 1);
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

}  // namespace

bool ParseBatchScript(const std::string& script, std::string& nonce,
                      std::vector<BatchEntry>& entries) {
  static const std::string kBegin = "printf '\\n@@";
  entries.clear();
  std::size_t pos = script.find(kBegin);
  while (pos != std::string::npos) {
    pos += kBegin.size();
    const std::size_t quote = script.find('\'', pos);
    if (script.substr(pos, quote - pos).find(" begin") == std::string::npos) {
      pos = script.find(kBegin, pos);  // an end marker's printf
      continue;
    }
    const std::size_t space = script.find(' ', pos);
    nonce = script.substr(pos, space - pos);
    BatchEntry entry;
    // Digits, as BuildBatchScript prints the id; anything else is not one
    // of its batches (and must not throw out of the fake transport).
    const char* id_begin = script.data() + space + 1;
    const auto [id_end, ec] = std::from_chars(id_begin, script.data() + script.size(), entry.id);
    if (ec != std::errc() || id_end == id_begin) {
      return false;
    }
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
      entry.env[name] = value;
      body = value_pos + 1;
    }
    const std::string kEnd = ") </dev/null\ngpuctl_rc=$?\n";
    const std::size_t end = script.find(kEnd, body);
    if (end == std::string::npos) {
      return false;
    }
    entry.script = script.substr(body, end - body);
    if (!entry.script.empty() && entry.script.back() == '\n') {
      entry.script.pop_back();
    }
    entries.push_back(std::move(entry));
    pos = script.find(kBegin, end);
  }
  return !entries.empty();
}

void AppendBatchResult(const std::string& nonce, std::size_t id, const CommandResult& result,
                       std::string& out, std::string& err) {
  out += fmt::format("\n@@{} {} begin\n{}\n@@{} {} end {}\n", nonce, id, result.out, nonce, id,
                     result.exit_status);
  err += fmt::format("\n@@{} {} begin\n{}\n@@{} {} end\n", nonce, id, result.err, nonce, id);
}

}  // namespace gpuctl
