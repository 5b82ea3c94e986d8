// Fake nodes for apply tests over FakeTransport, with MakeStep's scripts
// ("probe <id>", "verify <id>", "apt|dnf change <id>"): each node answers
// the identify phase with an os-release fixture and keeps what its changes
// did, so a step's probe and verification pass once its change ran there.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "cluster_builder.h"
#include "gpuctl/model/os_release.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl::testing {

class ConvergingNodes {
 public:
  // The os-release fixture a node answers with ("ubuntu-22.04" for all
  // unless a test says otherwise).
  std::function<std::string(const std::string& node)> os = [](const std::string&) {
    return std::string("ubuntu-22.04");
  };
  // Steps already true on every node before any change.
  std::set<std::string> true_everywhere;
  // A change's own answer instead of succeeding (a failure, say); nullopt:
  // the change succeeds and is remembered.
  std::function<std::optional<CommandResult>(const std::string& node, const std::string& step)>
      change;

  void Attach(FakeTransport& transport) {
    transport.AddHandler(
        [this](const std::string& node, const Command& c) { return Answer(node, c); });
  }
  void MarkDone(const std::string& node, const std::string& step) {
    std::lock_guard lock(mutex_);
    done_.insert({node, step});
  }
  [[nodiscard]] bool IsDone(const std::string& node, const std::string& step) const {
    std::lock_guard lock(mutex_);
    return done_.count({node, step}) != 0;
  }

 private:
  std::optional<CommandResult> Answer(const std::string& node, const Command& c) {
    CommandResult r;
    r.exit_status = 0;
    if (c.script == OsReleaseScript()) {
      r.out = OsReleaseFixture(os(node));
      return r;
    }
    const std::string& s = c.script;
    const std::string verb = s.substr(0, s.find(' '));
    const std::string step = s.substr(s.rfind(' ') + 1);
    if (verb == "probe" || verb == "verify") {
      r.exit_status = true_everywhere.count(step) != 0 || IsDone(node, step) ? 0 : 1;
      return r;
    }
    if (verb == "apt" || verb == "dnf") {
      if (change) {
        if (auto own = change(node, step)) {
          return own;
        }
      }
      MarkDone(node, step);
      return r;
    }
    return std::nullopt;  // gpuctl's own bookkeeping (locks): the default answer
  }

  mutable std::mutex mutex_;
  std::set<std::pair<std::string, std::string>> done_;
};

}  // namespace gpuctl::testing
