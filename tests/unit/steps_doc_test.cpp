// docs/steps.md is generated from the catalog; a step added to playbooks/
// without regenerating the page fails here instead of leaving the docs stale.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"
#include "gpuctl/view/catalog_view.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRegenerate =
    "docs/steps.md is stale; regenerate it from the source tree with:\n"
    "  ./build/gpuctl --playbooks playbooks catalog --markdown > docs/steps.md";

TEST(StepsDocTest, DocsStepsMdIsWhatTheCatalogGenerates) {
  const fs::path source = GPUCTL_SOURCE_DIR;
  // The source tree's playbooks explicitly: neither $GPUCTL_PLAYBOOKS nor an
  // installed copy may stand in for the catalog the page documents.
  Diagnostics diagnostics;
  const auto catalog = Catalog::Load((source / "playbooks").string(), diagnostics);
  ASSERT_TRUE(catalog.has_value()) << diagnostics.Format();
  const std::string generated = RenderCatalogMarkdown(*catalog);

  std::ifstream in(source / "docs" / "steps.md", std::ios::binary);
  ASSERT_TRUE(in) << "docs/steps.md is missing. " << kRegenerate;
  std::ostringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == generated) << kRegenerate;
}

}  // namespace
}  // namespace gpuctl
