#include "cli/command_tree.h"

#include <set>

#include "gpuctl/model/catalog.h"

namespace gpuctl::cli {
namespace {

// CLI::IsMember's description is "{a,b,c}", appended to the type name after
// a colon ("TEXT:{text,json}").
std::vector<std::string> Choices(const std::string& type_name) {
  std::vector<std::string> choices;
  const auto open = type_name.find(":{");
  const auto close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) {
    return choices;
  }
  std::string item;
  for (char c : type_name.substr(open + 2, close - open - 2)) {
    if (c == ',') {
      choices.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  choices.push_back(item);
  return choices;
}

OptionDoc Describe(const CLI::Option& option) {
  OptionDoc doc;
  for (const std::string& s : option.get_snames()) doc.names.push_back("-" + s);
  for (const std::string& l : option.get_lnames()) doc.names.push_back("--" + l);
  if (!option.nonpositional()) doc.positional = option.get_name();
  doc.description = option.get_description();
  if (option.get_type_size() != 0) {
    const std::string type = option.get_type_name();
    doc.value = type.substr(0, type.find(':'));
    doc.choices = Choices(type);
  }
  doc.envname = option.get_envname();
  doc.default_value = option.get_default_str();
  return doc;
}

std::vector<OptionDoc> Options(const CLI::App& app) {
  std::vector<OptionDoc> options;
  std::vector<OptionDoc> positionals;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;
    (option->nonpositional() ? options : positionals).push_back(Describe(*option));
  }
  options.insert(options.end(), positionals.begin(), positionals.end());
  return options;
}

}  // namespace

CommandTreeDoc DescribeCommands(const CLI::App& app) {
  CommandTreeDoc tree;
  tree.description = app.get_description();
  tree.global = Options(app);
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_group().empty()) continue;
    tree.commands.push_back(
        {sub->get_name(), sub->get_description(), sub->get_prefix_command(), Options(*sub)});
  }
  return tree;
}

std::vector<std::string> StepNames(const std::string& playbooks) {
  Diagnostics diagnostics;
  const auto catalog =
      Catalog::Load(playbooks.empty() ? DefaultPlaybookDir() : playbooks, diagnostics);
  std::vector<std::string> names;
  if (!catalog) return names;
  std::set<std::string> groups;
  for (const Step& step : catalog->steps()) {
    names.push_back(step.id);
    groups.insert(step.id.substr(0, step.id.find('.')));
  }
  names.insert(names.begin(), groups.begin(), groups.end());
  return names;
}

}  // namespace gpuctl::cli
