// CatalogView: the loaded catalog shown as a listing, as the Markdown page
// docs/steps.md, and as one shell file per script (`catalog --scripts`).
// Functions of the catalog alone, so the docs-drift test calls them directly.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpuctl/model/catalog.h"

namespace gpuctl {

// One row per step, in plan order: "<id padded> <description>".
std::string RenderCatalogText(const Catalog& catalog);

// docs/steps.md: the table of steps, then each step's probe and verification.
std::string RenderCatalogMarkdown(const Catalog& catalog);

// A file `catalog --scripts DIR` writes. A script that runs exactly what an
// earlier one runs (YAML anchors share scripts between steps) names that
// earlier file in `same_as` and is written as a symlink to it, so a finder
// of copies finds only real ones.
struct ScriptFile {
  std::string name;     // <step>.<kind>.sh, <step>.common.sh or prelude.sh
  std::string text;     // the file's bytes; empty when same_as is set
  std::string same_as;  // the earlier file's name, or empty
};

// Every script of the catalog with what shellcheck needs to read it as gpuctl
// runs it: POSIX sh (nodes run `sh -s`: dash on Debian and Ubuntu), and the
// prelude's and the step's common: definitions, sourced from prelude.sh (a
// copy, line for line) and <step>.common.sh.
std::vector<ScriptFile> CatalogScriptFiles(const Catalog& catalog);

// What `catalog --scripts DIR` says once the files are written.
std::string ScriptsWrittenLine(std::size_t count, const std::string& dir);

}  // namespace gpuctl
