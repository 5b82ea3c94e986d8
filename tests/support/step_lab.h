// A lab for testing some playbooks alone: brings up a lab, copies the named
// playbooks (and the prelude) into the lab's state dir, and runs gpuctl with
// only those (GPUCTL_PLAYBOOKS), so a test neither waits for nor depends on
// the other areas' steps.
#pragma once

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/lab_support.h"

namespace gpuctl::test {

class StepLabTest : public ::testing::Test {
 protected:
  // `prefix` starts the lab's name (the pid follows); `playbooks` are file
  // names under playbooks/.
  void UpWith(const std::string& prefix, const std::vector<std::string>& playbooks,
              const std::string& shape = "--profile mixed") {
    if (const std::string why = MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    lab_ = std::make_unique<Lab>(fmt::format("{}{}", prefix, getpid()));
    std::string log;
    ASSERT_TRUE(lab_->Up(&log, shape)) << log;
    runs_ = fs::path(lab_->Env("LAB_STATE")) / "test-runs";
    playbooks_ = runs_ / "playbooks";
    fs::create_directories(playbooks_);
    fs::copy_file(fs::path(GPUCTL_SOURCE_DIR) / "playbooks/prelude.sh", playbooks_ / "prelude.sh");
    for (const std::string& f : playbooks) {
      fs::copy_file(fs::path(GPUCTL_SOURCE_DIR) / "playbooks" / f, playbooks_ / f);
    }
  }
  void TearDown() override {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
  }

  // gpuctl ARGS INVENTORY (the lab's own by default), output and status.
  [[nodiscard]] Result Gpuctl(const std::string& args, std::string inventory = "") const {
    if (inventory.empty()) inventory = lab_->Env("LAB_INVENTORY");
    return Shell("NO_COLOR=1 GPUCTL_PLAYBOOKS=" + Quote(playbooks_.string()) + " " + GPUCTL_BINARY +
                 " " + args + " " + Quote(inventory) + " 2>&1 </dev/null");
  }
  // apply, check, apply again: converges, checks green, then sends nothing.
  void Converge(const std::string& name, const std::string& inventory = "") const {
    const Result first = Gpuctl("apply --yes --run-dir " + RunDir(name), inventory);
    ASSERT_EQ(first.status, 0) << first.out;
    const Result check = Gpuctl("check", inventory);
    EXPECT_EQ(check.status, 0) << check.out;
    const Result again = Gpuctl("apply --yes --run-dir " + RunDir(name + "-again"), inventory);
    EXPECT_EQ(again.status, 0) << again.out;
    EXPECT_EQ(ChangesIn(RunDir(name + "-again")), 0) << again.out;
  }
  [[nodiscard]] std::string RunDir(const std::string& name) const {
    return (runs_ / name).string();
  }
  // A command's trimmed stdout on a node.
  [[nodiscard]] std::string On(const std::string& node, const std::string& command) const {
    return Trim(lab_->Ssh(node, command).out);
  }

  std::unique_ptr<Lab> lab_;
  fs::path runs_;
  fs::path playbooks_;
};

}  // namespace gpuctl::test
