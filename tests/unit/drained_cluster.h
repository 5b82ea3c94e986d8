// DrainedCluster: a running cluster behind the fake transport, for the
// executor's drains (drain_test, executor_leaving_test). It records, in
// order, each drain and resume ("w2:drain@master1": w2 drained on master1),
// each change, verification and reboot ("w1:change X"), which nodes are
// drained now and the most drained at once. Steps are cluster_builder.h's
// MakeStep: "probe X" and "verify X" pass once "apt|dnf change X" ran on
// that node. The catalog's drain runs "member-check", "drain-node" and
// "resume-node".
#pragma once

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gpuctl/model/drain.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl::testing {

class DrainedCluster {
 public:
  explicit DrainedCluster(FakeTransport& transport) {
    transport.AddHandler(
        [this](const std::string& node, const Command& c) -> std::optional<CommandResult> {
          std::lock_guard lock(mutex_);
          CommandResult r;
          r.exit_status = 0;
          const std::string& s = c.script;
          const auto target = c.env.find(std::string(kDrainNodeVariable));
          if (s == "member-check") {
            r.exit_status = member_answer_.count(node) != 0 ? member_answer_[node]
                            : members_.count(node) != 0     ? 0
                                                            : 1;
            return r;
          }
          if (s == "drain-node" || s == "resume-node") {
            const std::string& who = target->second;
            const bool drain = s == "drain-node";
            events_.push_back(fmt::format("{}:{}@{}", who, drain ? "drain" : "resume", node));
            if (drain && failing_drain_.count(who) != 0) {
              r.exit_status = 1;
              r.err =
                  "error when evicting pods/\"trainer-0\" -n \"ml\": Cannot evict pod as it would "
                  "violate the pod's disruption budget.\n";
              return r;
            }
            if (drain) {
              drained_.insert(who);
              max_drained_ = std::max(max_drained_, drained_.size());
            } else {
              drained_.erase(who);
            }
            return r;
          }
          if (s.rfind("touch /run/gpuctl-reboot-marker", 0) == 0) {
            events_.push_back(node + ":reboot");
            return r;
          }
          if (s.find("gpuctl-reboot-marker") != std::string::npos) {
            return r;  // back at once
          }
          const std::string verb = s.substr(0, s.find(' '));
          const std::string step = s.substr(s.rfind(' ') + 1);
          if (verb == "probe" || verb == "verify") {
            r.exit_status = done_.count({node, step}) != 0 ? 0 : 1;
            if (verb == "verify") {
              events_.push_back(fmt::format("{}:verify {}", node, step));
            }
          } else if (verb == "apt" || verb == "dnf") {
            events_.push_back(fmt::format("{}:change {}", node, step));
            if (failing_change_.count(node) != 0 || failing_step_.count({node, step}) != 0) {
              r.exit_status = 100;
              r.err = "E: Sub-process /usr/bin/dpkg returned an error code (1)\n";
            } else {
              done_.insert({node, step});
            }
          }
          return r;
        });
  }
  void Member(const std::string& node) { members_.insert(node); }
  void MemberAnswers(const std::string& node, int status) { member_answer_[node] = status; }
  void FailDrain(const std::string& node) { failing_drain_.insert(node); }
  void FailChange(const std::string& node) { failing_change_.insert(node); }
  void FailChange(const std::string& node, const std::string& step) {
    failing_step_.insert({node, step});
  }

  std::vector<std::string> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // `node`'s events, in order, without the "node:" prefix.
  std::vector<std::string> EventsOf(const std::string& node) {
    std::vector<std::string> mine;
    for (const std::string& e : events()) {
      if (e.rfind(node + ":", 0) == 0) {
        mine.push_back(e.substr(node.size() + 1));
      }
    }
    return mine;
  }
  // Where `event` is in the whole record; events().size() if it is not.
  std::size_t IndexOf(const std::string& event) {
    const std::vector<std::string> all = events();
    return static_cast<std::size_t>(std::find(all.begin(), all.end(), event) - all.begin());
  }
  std::size_t Count(const std::string& event) {
    const std::vector<std::string> all = events();
    return static_cast<std::size_t>(std::count(all.begin(), all.end(), event));
  }
  std::size_t max_drained() {
    std::lock_guard lock(mutex_);
    return max_drained_;
  }
  std::set<std::string> drained() {
    std::lock_guard lock(mutex_);
    return drained_;
  }

 private:
  std::mutex mutex_;
  std::set<std::string> members_, failing_drain_, failing_change_, drained_;
  std::map<std::string, int> member_answer_;
  std::set<std::pair<std::string, std::string>> done_, failing_step_;
  std::vector<std::string> events_;
  std::size_t max_drained_ = 0;
};

// The catalog drain whose scripts DrainedCluster answers.
inline Drain TestDrain() {
  Drain drain;
  drain.description = "test drain";
  drain.on = Role::kMaster;
  drain.member = "member-check";
  drain.drain = "drain-node";
  drain.resume = "resume-node";
  return drain;
}

}  // namespace gpuctl::testing
