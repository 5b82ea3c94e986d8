// A saved plan file (`apply plan.json`), read as apply reads it: the JSON
// parser's errors and PlanFromJson's LoadError are its documented refusals,
// anything else escaping is a crash. A plan it accepts is written again and
// must read back the same.
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "gpuctl/run/drift.h"
#include "gpuctl/view/plan_view.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuctl::fuzz::Check;
  std::optional<gpuctl::SavedPlan> saved;
  try {
    saved =
        gpuctl::PlanFromJson(nlohmann::json::parse(gpuctl::fuzz::Text(data, size)), "fuzz.json");
  } catch (const gpuctl::LoadError&) {
    return 0;
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  (void)saved->plan.Summarize().Line();
  const std::string again = gpuctl::PlanToJson(saved->plan, saved->header, {}).dump(2);
  const auto back = gpuctl::PlanFromJson(nlohmann::json::parse(again), "again.json");
  Check(back.header.node_os == saved->header.node_os &&
            back.header.inventory_digest == saved->header.inventory_digest &&
            back.header.catalog_digest == saved->header.catalog_digest,
        "a plan's header reads back as written");
  Check(back.plan.items().size() == saved->plan.items().size(),
        "a plan's items read back as written");
  for (std::size_t i = 0; i < back.plan.items().size(); ++i) {
    const auto& a = back.plan.items()[i];
    const auto& b = saved->plan.items()[i];
    Check(a.node == b.node && a.step == b.step && a.state == b.state && a.observed == b.observed &&
              a.after == b.after && a.env == b.env,
          "a plan item reads back as written");
  }
  return 0;
}
