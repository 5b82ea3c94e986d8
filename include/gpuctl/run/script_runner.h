// ScriptRunner: the one way a script reaches a node. A step's script (probe,
// verification, change) goes after the catalog's prelude, is reported to the
// run's Reporter as it starts (the step's own text, redacted) and ends, and
// comes back with its output redacted. gpuctl's own scripts (os-release, the
// node lock, reboot marks) and reads of other nodes' values go through the
// same object, unreported and unredacted: an input's value must reach the
// step that reads it as the node printed it.
//
// It depends on the transport, the reporter and the redactor only, so every
// layer above (Prober, Executor, StepInputs, the phases) can use it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuctl/run/redact.h"
#include "gpuctl/run/reporter.h"
#include "gpuctl/transport/transport.h"
#include "gpuctl/util/text.h"

namespace gpuctl {

// The full text sent to a node: the catalog's prelude, then the script.
std::string WithPrelude(const std::string& prelude, const std::string& script);

class ScriptRunner {
 public:
  // The references must outlive the runner; `prelude` may be empty.
  ScriptRunner(Connection& connection, Reporter& reporter, const Redactor& redactor,
               const std::string& prelude)
      : connection_(connection), reporter_(reporter), redactor_(redactor), prelude_(prelude) {}

  // Runs a step's `script` on `node` after the prelude, with `env`, reported
  // as `activity` of `step`. Output redacted. `env` by value: a caller done
  // with its own moves it in (600,000 copies of a 10,000-node apply).
  CommandResult RunStep(const std::string& node, const std::string& step, Activity activity,
                        const std::string& script, std::map<std::string, std::string> env);

  // For scripts that carry many steps (a probe batch): each step is reported
  // on its own, Started before its result is read and Finished with it.
  void Started(const std::string& node, const std::string& step, Activity activity,
               const std::string& script);
  // Returns `result` redacted, as it was reported.
  CommandResult Finished(const std::string& node, const std::string& step, Activity activity,
                         CommandResult result);

  // `script` after the prelude (an input's read), unreported, as printed.
  CommandResult RunWithPrelude(const std::string& script, std::map<std::string, std::string> env);
  // `command` exactly as given (gpuctl's own scripts, a whole batch),
  // unreported, as printed.
  CommandResult Run(const Command& command) { return connection_.Run(command); }

  [[nodiscard]] bool Alive() const { return connection_.Alive(); }
  [[nodiscard]] const std::string& prelude() const { return prelude_; }
  [[nodiscard]] const Redactor& redactor() const { return redactor_; }

 private:
  Connection& connection_;
  Reporter& reporter_;
  const Redactor& redactor_;
  const std::string& prelude_;
};

}  // namespace gpuctl
