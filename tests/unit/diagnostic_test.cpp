#include "gpuctl/model/diagnostic.h"

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

TEST(Diagnostic, FormatsFileLineColumn) {
  Diagnostic d{
      Severity::kError, {"inv.yaml", 12, 5}, "unknown key 'adress' (did you mean 'address'?)"};
  EXPECT_EQ(d.Format(), "inv.yaml:12:5: error: unknown key 'adress' (did you mean 'address'?)");
}

TEST(Diagnostic, FormatsWithoutPosition) {
  Diagnostic d{Severity::kWarning, {"inv.yaml", 0, 0}, "empty"};
  EXPECT_EQ(d.Format(), "inv.yaml: warning: empty");
}

TEST(Diagnostics, CountsOnlyErrorsAndKeepsOrder) {
  Diagnostics ds;
  ds.Warning({"a", 1, 1}, "w");
  EXPECT_FALSE(ds.HasErrors());
  ds.Error({"a", 2, 3}, "e1");
  ds.Error({"a", 4, 1}, "e2");
  EXPECT_EQ(ds.ErrorCount(), 2U);
  EXPECT_EQ(ds.Format(), "a:1:1: warning: w\na:2:3: error: e1\na:4:1: error: e2\n");
}

TEST(LoadError, CarriesEveryDiagnostic) {
  Diagnostics ds;
  ds.Error({"x", 1, 2}, "bad");
  LoadError err(ds);
  EXPECT_STREQ(err.what(), "x:1:2: error: bad\n");
  EXPECT_EQ(err.diagnostics().ErrorCount(), 1U);
}

}  // namespace
}  // namespace gpuctl
