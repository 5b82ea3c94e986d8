// gpuctl catalog: what the loaded catalog can do, one row per step.
// `--markdown` is the source of docs/steps.md, so that page cannot drift from
// playbooks/ (a unit test compares them). `--scripts DIR` writes every
// script as a file, for shellcheck and the duplicate finder
// (scripts/lint-steps.sh).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "gpuctl/model/catalog.h"
#include "gpuctl/view/catalog_view.h"

namespace gpuctl::cli {

namespace {

// Writes `files` into the new or empty directory `dir`, a file that runs what
// an earlier one runs as a symlink to it. Returns the number of names
// written, or -1 with `error` set.
int WriteScripts(const std::vector<ScriptFile>& files, const std::string& dir, std::string& error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec) || !fs::is_empty(dir, ec)) {
    error = fmt::format("--scripts {}: not a new or empty directory{}", dir,
                        ec ? " (" + ec.message() + ")" : "");
    return -1;
  }
  int count = 0;
  for (const ScriptFile& file : files) {
    const fs::path path = fs::path(dir) / file.name;
    if (!file.same_as.empty()) {
      fs::create_symlink(file.same_as, path, ec);
      if (ec) {
        error = fmt::format("cannot link {}: {}", path.string(), ec.message());
      }
    } else {
      std::ofstream out(path, std::ios::binary);
      out << file.text;
      out.close();
      if (!out) {
        error = fmt::format("cannot write {}", path.string());
      }
    }
    if (!error.empty()) {
      return -1;
    }
    ++count;
  }
  return count;
}

}  // namespace

void SetCatalogCommand(CLI::App& app, const GlobalOptions& global, int& exit_code) {
  auto* cmd = app.add_subcommand("catalog",
                                 "List the steps of the catalog (--playbooks), in plan order.\n"
                                 "--markdown prints the table docs/steps.md is generated from;\n"
                                 "--scripts DIR writes every script as a file (for shellcheck).");
  auto markdown = std::make_shared<bool>(false);
  auto scripts = std::make_shared<std::string>();
  cmd->add_flag("--markdown", *markdown, "Print a Markdown table (docs/steps.md)");
  cmd->add_option("--scripts", *scripts,
                  "Write each script to DIR/<step>.<probe|change-apt|change-dnf|change-any|verify|"
                  "common|input.NAME>.sh, and the prelude to DIR/prelude.sh (DIR new or empty)")
      ->option_text("DIR");
  cmd->callback([markdown, scripts, &global, &exit_code] {
    Diagnostics diagnostics;
    const std::string dir = global.playbooks.empty() ? DefaultPlaybookDir() : global.playbooks;
    auto catalog = Catalog::Load(dir, diagnostics);
    std::cerr << diagnostics.Format();
    if (!catalog) {
      exit_code = kExitError;
      return;
    }
    if (!scripts->empty()) {
      std::string error;
      const int count = WriteScripts(CatalogScriptFiles(*catalog), *scripts, error);
      if (count < 0) {
        std::cerr << "gpuctl: " << error << "\n";
        exit_code = kExitError;
        return;
      }
      std::cout << ScriptsWrittenLine(static_cast<std::size_t>(count), *scripts);
    } else if (*markdown) {
      std::cout << RenderCatalogMarkdown(*catalog);
    } else {
      std::cout << RenderCatalogText(*catalog);
    }
    exit_code = kExitOk;
  });
}

}  // namespace gpuctl::cli
