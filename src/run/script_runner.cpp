#include "gpuctl/run/script_runner.h"

#include <utility>

namespace gpuctl {

std::string WithPrelude(const std::string& prelude, const std::string& script) {
  if (prelude.empty()) {
    return script;
  }
  return prelude + std::string(kStepMark) + script;
}

CommandResult ScriptRunner::RunStep(const std::string& node, const std::string& step,
                                    Activity activity, const std::string& script,
                                    std::map<std::string, std::string> env) {
  // -v shows the step's own script; the prelude is the same for every step.
  Started(node, step, activity, script);
  return Finished(node, step, activity, RunWithPrelude(script, std::move(env)));
}

void ScriptRunner::Started(const std::string& node, const std::string& step, Activity activity,
                           const std::string& script) {
  static const std::string kUnshown;
  reporter_.CommandStarted(node, step, activity,
                           reporter_.ShowsScripts() ? redactor_.Apply(script) : kUnshown);
}

CommandResult ScriptRunner::Finished(const std::string& node, const std::string& step,
                                     Activity activity, CommandResult result) {
  result.out = redactor_.Apply(std::move(result.out));
  result.err = redactor_.Apply(std::move(result.err));
  reporter_.CommandFinished(node, step, activity, result);
  return result;
}

CommandResult ScriptRunner::RunWithPrelude(const std::string& script,
                                           std::map<std::string, std::string> env) {
  Command command;
  command.prelude = prelude_;
  command.script = script;
  command.env = std::move(env);
  return connection_.Run(command);
}

}  // namespace gpuctl
