// StepInputs: what a step's scripts need beyond the inventory, gathered at
// the moment a script runs: values fetched from another node (`inputs:`, e.g.
// the master's join command) and the inventory's secrets (`secrets:`, e.g. the
// munge key from the environment variable the inventory names).
//
// Inputs are read over their own connection to the source node, so a worker's
// walker never shares the master's session with the master's own walker.
// Secret values are registered with the run's Redactor before any script that
// receives them runs, and live only in the command's environment.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/inventory.h"
#include "gpuctl/run/redact.h"
#include "gpuctl/run/reporter.h"
#include "gpuctl/transport/transport.h"

namespace gpuctl {

// Which script the values are for. A non-secret input is read once and kept
// until its source node runs a change, reboots or hands out a secret input
// (SourceChanged): only those can make or alter it (the master's key exists
// only after its step ran), and a value per script would cost a command per
// node and script (2*N*N reads of every worker's hardware for N workers). A
// secret input is never kept.
enum class InputUse {
  kPlan,    // probe or check: non-secret inputs
  kVerify,  // apply's probes and verifications: non-secret inputs
  kChange,  // the change: every input, secret ones too
};

class StepInputs {
 public:
  // Inputs are read with `prelude` before their scripts, over connections
  // of their own from `transport`; secrets are registered with `redactor`.
  StepInputs(const Inventory& inventory, const std::string& prelude, Transport& transport,
             Redactor& redactor, Reporter& reporter, bool trust_new_host_keys)
      : inventory_(inventory),
        holders_(inventory.RoleHolders()),
        prelude_(prelude),
        transport_(transport),
        redactor_(redactor),
        reporter_(reporter),
        trust_new_host_keys_(trust_new_host_keys) {}
  ~StepInputs();
  StepInputs(const StepInputs&) = delete;
  StepInputs& operator=(const StepInputs&) = delete;

  // Adds GPUCTL_<NAME> for the step's secrets and for each input `use`
  // covers to `env`. False when an input could not be read (its source is not
  // ready yet, or unreachable); `why` then names the input and the node.
  bool Resolve(const Step& step, InputUse use, std::map<std::string, std::string>& env,
               std::string& why);

  // A change ran on `node`, or it rebooted: values read from it are read
  // again. A read already under way when this is called is not kept.
  void SourceChanged(const std::string& node);

  // Closes the connections opened for inputs (the connect phase's clean-up).
  void Close();

 private:
  struct Source {
    std::mutex mutex;  // one command at a time on the connection
    std::unique_ptr<Connection> connection;
  };
  void RedactSecret(const std::string& value);
  // One source's value: the kept one, or read now (and kept unless secret).
  bool Read(const Node& source, const StepInput& input, std::string& value, std::string& why);
  bool Fetch(const Node& node, const StepInput& input, std::string& value, std::string& why);

  const Inventory& inventory_;
  std::map<Role, std::vector<const Node*>> holders_;  // once: asked for on every item
  const std::string& prelude_;
  Transport& transport_;
  Redactor& redactor_;
  Reporter& reporter_;
  bool trust_new_host_keys_;
  std::mutex mutex_;  // guards sources_ and cache_
  std::map<std::string, std::shared_ptr<Source>> sources_;
  std::map<std::string, std::string> cache_;  // "node/input" -> value (non-secret only)
  std::map<std::string, int> changes_;        // node -> SourceChanged calls so far
};

}  // namespace gpuctl
