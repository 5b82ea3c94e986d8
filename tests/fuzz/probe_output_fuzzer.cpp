// What a node prints in answer to a batch of probes, through everything that
// reads it: SplitBatchOutput and Prober::RunAll's recording (state, trimmed
// and capped output, the tail of stderr, redaction), then the plan saved as
// `plan --out` writes it and read back as `apply plan.json` reads it, which
// must give the same plan: otherwise a saved plan would refuse to apply.
//
// Input: one flags byte (bit 0: the connection is still alive; bit 1: the
// batch timed out), the batch's stdout, a NUL byte, its stderr. "@@N "
// stands for the marker prefix with the batch's random nonce, so the seeds
// stay readable and the fuzzer can reach the markers.
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "gpuctl/run/drift.h"
#include "gpuctl/run/prober.h"
#include "gpuctl/view/plan_view.h"

namespace {

std::string WithNonce(const std::string& text, const std::string& nonce) {
  const std::string placeholder = "@@N ";
  const std::string marker = "@@" + nonce + " ";
  std::string out;
  std::size_t start = 0;
  for (std::size_t at = text.find(placeholder); at != std::string::npos;
       at = text.find(placeholder, start)) {
    out.append(text, start, at - start);
    out += marker;
    start = at + placeholder.size();
  }
  out.append(text, start);
  return out;
}

// Answers the batch with the fuzzer's bytes, as a node's shell would print.
class ScriptedConnection : public gpuctl::Connection {
 public:
  ScriptedConnection(std::string out, std::string err, bool alive, bool timed_out)
      : out_(std::move(out)), err_(std::move(err)), alive_(alive), timed_out_(timed_out) {}

  gpuctl::CommandResult Run(const gpuctl::Command& command) override {
    // The script's first marker carries the nonce: printf '\n@@<nonce> <id> begin
    const std::size_t at = command.script.find("@@");
    gpuctl::fuzz::Check(at != std::string::npos, "a batch script has markers");
    const std::size_t end = command.script.find(' ', at);
    const std::string nonce = command.script.substr(at + 2, end - at - 2);
    gpuctl::CommandResult result;
    result.exit_status = alive_ && !timed_out_ ? 0 : -1;
    result.timed_out = timed_out_;
    result.out = WithNonce(out_, nonce);
    result.err = WithNonce(err_, nonce);
    return result;
  }
  [[nodiscard]] bool Alive() const override { return alive_; }

 private:
  std::string out_;
  std::string err_;
  bool alive_;
  bool timed_out_;
};

gpuctl::Step MakeStep(const std::string& id, const std::string& verify) {
  gpuctl::Step step;
  step.id = id;
  step.roles = {gpuctl::Role::kWorker};
  step.probe = "test -e /etc/" + id;
  step.verify = verify;
  return step;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuctl::fuzz::Check;
  if (size == 0) {
    return 0;
  }
  const std::string text = gpuctl::fuzz::Text(data + 1, size - 1);
  const std::size_t nul = text.find('\0');
  ScriptedConnection connection(text.substr(0, nul),
                                nul == std::string::npos ? "" : text.substr(nul + 1),
                                (data[0] & 1U) != 0, (data[0] & 2U) != 0);

  // Three items on one node, the second with a verification of its own.
  const std::vector<gpuctl::Step> steps = {
      MakeStep("fuzz.a", ""), MakeStep("fuzz.b", "test -s /etc/fuzz.b"), MakeStep("fuzz.c", "")};
  std::vector<gpuctl::PlanItem> items;
  for (const auto& step : steps) {
    gpuctl::PlanItem item;
    item.id = items.size();
    item.node = "w1";
    item.step = step.id;
    item.digest = "d" + step.id;
    items.push_back(std::move(item));
  }
  gpuctl::Plan plan = gpuctl::Plan::FromItems({"w1"}, std::move(items));

  gpuctl::Reporter reporter;
  gpuctl::Redactor redactor;
  redactor.Add("fuzz-secret-token");
  const std::string prelude = "set -u";
  gpuctl::ScriptRunner runner(connection, reporter, redactor, prelude);
  gpuctl::Prober prober(runner);
  std::vector<gpuctl::Prober::Target> targets;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    targets.push_back({&steps[i], &plan.items()[i]});
  }
  prober.RunAll(targets, gpuctl::Activity::kProbe);
  for (const auto& item : plan.items()) {
    Check(item.state != gpuctl::ItemState::kUnprobed, "every probed item has a verdict");
    (void)gpuctl::Tail(item.observed, 3);
  }
  (void)plan.Summarize().Line();

  // plan --out, then apply plan.json.
  gpuctl::PlanHeader header;
  header.cluster = "fuzz";
  header.inventory_path = "/fuzz.yaml";
  header.node_os = {{"w1", "rocky-9"}};
  const std::string saved = gpuctl::PlanToJson(plan, header, {}).dump(2);
  const auto back = gpuctl::PlanFromJson(nlohmann::json::parse(saved), "fuzz.json");
  Check(gpuctl::CompareWithSaved(back.plan, plan).empty(),
        "a saved plan reads back as the plan that was saved");
  return 0;
}
