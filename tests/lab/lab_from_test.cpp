// A lab from a site's own inventory (gpuctl-lab up --from, docs/lab.md and
// docs/ci.md): the CI flow on inventories/seed.yaml (a master, two 8x A100
// workers with two IB ports each, a storage node): lab up --from, validate,
// plan, apply, check, and a second apply that changes nothing. The lab's
// nodes carry the inventory's names, OS and hardware at lab addresses, and
// the address map says which lab address stands for which site address.
//
// To keep the test short, gpuctl works on the os, gpu and ib groups (what
// makes nvidia-smi and ibstat answer on the nodes), not the whole catalog.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/lab_support.h"

namespace gpuctl {
namespace {

using test::ChangesIn;
using test::Lab;
using test::Quote;
using test::ReadFile;
using test::Result;
using test::Shell;
using test::Trim;
namespace fs = std::filesystem;

const std::string kSeed = std::string(GPUCTL_SOURCE_DIR) + "/inventories/seed.yaml";

class LabFromTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    test::OnlySteps("os,gpu,ib");
  }
  void TearDown() override {
    if (lab_ != nullptr) lab_->Down(/*purge=*/true);
    test::OnlySteps("");
  }

  Result Gpuctl(const std::string& args) const {
    return Shell(std::string("NO_COLOR=1 ") + GPUCTL_BINARY + " " + args + " " +
                 Quote(lab_->Env("LAB_INVENTORY")) + " 2>&1 </dev/null");
  }

  std::unique_ptr<Lab> lab_;
};

// node -> {site address, lab address}, from the address map (TSV, '#' header).
std::map<std::string, std::pair<std::string, std::string>> ReadMap(const std::string& path) {
  std::map<std::string, std::pair<std::string, std::string>> map;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string node, site, lab;
    std::getline(fields, node, '\t');
    std::getline(fields, site, '\t');
    std::getline(fields, lab, '\t');
    map[node] = {site, lab};
  }
  return map;
}

TEST_F(LabFromTest, SiteInventoryBecomesALabThatValidatesPlansAppliesAndChecks) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  lab_ = std::make_unique<Lab>("lf" + std::to_string(getpid()));
  std::string log;
  ASSERT_TRUE(lab_->Up(&log, "--from " + Quote(kSeed))) << log;
  const auto up_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << "lab up --from seed.yaml: " << up_s << " s\n";

  // The inventory's nodes, in its order, at lab addresses; the map pairs
  // each with the site address it stands for.
  std::vector<std::string> names;
  for (const auto& node : lab_->nodes()) names.push_back(node.name);
  EXPECT_EQ(names, (std::vector<std::string>{"master1", "worker1", "worker2", "storage1"}));
  const std::string map_path = lab_->Env("LAB_ADDRESS_MAP");
  ASSERT_EQ(map_path, lab_->Env("LAB_STATE") + "/address-map.tsv");
  const auto map = ReadMap(map_path);
  const std::map<std::string, std::string> site = {{"master1", "198.18.0.10"},
                                                   {"worker1", "198.18.0.11"},
                                                   {"worker2", "198.18.0.12"},
                                                   {"storage1", "198.18.0.20"}};
  ASSERT_EQ(map.size(), site.size()) << ReadFile(map_path);
  const std::string subnet = lab_->Env("LAB_SUBNET");
  const std::string net = subnet.substr(0, subnet.rfind('.') + 1);
  const std::string inventory = ReadFile(lab_->Env("LAB_INVENTORY"));
  for (const auto& node : lab_->nodes()) {
    ASSERT_TRUE(map.count(node.name)) << node.name;
    EXPECT_EQ(map.at(node.name).first, site.at(node.name));
    EXPECT_EQ(map.at(node.name).second, node.address);
    EXPECT_EQ(node.address.rfind(net, 0), 0U) << node.address << " not in " << subnet;
    EXPECT_NE(inventory.find("address: " + node.address + "\n"), std::string::npos) << inventory;
    EXPECT_EQ(node.os, "ubuntu-22.04");
  }
  // What the lab did not need to change is the site's.
  EXPECT_NE(inventory.find("cluster: seed\n"), std::string::npos) << inventory;
  EXPECT_NE(inventory.find("orchestrator: kubernetes\n"), std::string::npos) << inventory;
  EXPECT_NE(inventory.find("ib_address: 10.10.0.11\n"), std::string::npos) << inventory;
  EXPECT_NE(inventory.find("known_hosts: " + lab_->Env("LAB_KNOWN_HOSTS")), std::string::npos);

  const Result validate = Gpuctl("validate");
  ASSERT_EQ(validate.status, 0) << validate.out;
  const Result plan = Gpuctl("plan");
  EXPECT_EQ(plan.status, 2) << plan.out;  // changes to make
  const std::string runs = lab_->Env("LAB_STATE") + "/test-runs";
  const Result apply = Gpuctl("apply --yes --run-dir " + runs + "/first");
  ASSERT_EQ(apply.status, 0) << apply.out;
  EXPECT_GT(ChangesIn(runs + "/first"), 10);
  const Result check = Gpuctl("check");
  EXPECT_EQ(check.status, 0) << check.out;

  // Each node is what the inventory says: its OS, and on the workers the
  // GPUs (model and count) and IB ports the stand-ins report.
  for (const auto& node : lab_->nodes()) {
    EXPECT_EQ(lab_->Ssh(node.name, ". /etc/os-release && echo $ID $VERSION_ID").out,
              "ubuntu 22.04\n")
        << node.name;
    EXPECT_EQ(Trim(lab_->Ssh(node.name, "hostname").out), node.name);
  }
  for (const std::string worker : {"worker1", "worker2"}) {
    const Result gpus = lab_->Ssh(worker, "nvidia-smi -L");
    ASSERT_EQ(gpus.status, 0) << worker << ": " << gpus.out;
    std::istringstream lines(gpus.out);
    int count = 0;
    for (std::string line; std::getline(lines, line); ++count) {
      EXPECT_NE(line.find("NVIDIA A100-SXM4-80GB"), std::string::npos) << worker << ": " << line;
    }
    EXPECT_EQ(count, 8) << worker << ": " << gpus.out;
    EXPECT_EQ(lab_->Ssh(worker, "ibstat -l").out, "mlx5_0\nmlx5_1\n") << worker;
    EXPECT_NE(lab_->Ssh(worker, "ibstat mlx5_1").out.find("Rate: 200"), std::string::npos);
  }
  for (const std::string plain : {"master1", "storage1"}) {
    EXPECT_NE(lab_->Ssh(plain, "nvidia-smi -L").status, 0) << plain << " has no GPUs";
  }

  const Result again = Gpuctl("apply --yes --run-dir " + runs + "/second");
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("No changes."), std::string::npos) << again.out;
  EXPECT_EQ(ChangesIn(runs + "/second"), 0);
  std::cout << "whole flow: " << std::chrono::duration<double>(Clock::now() - t0).count() << " s\n";
}

// An OS the lab cannot build is refused before anything is made, naming the
// node (ranges and node_defaults are expanded first) and what the lab offers.
TEST_F(LabFromTest, AnOsTheLabCannotBuildIsRefusedNamingTheNode) {
  const fs::path dir = fs::temp_directory_path() / ("lf-os-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path inv = dir / "inventory.yaml";
  std::ofstream(inv) << "cluster: site\n"
                        "node_defaults: {roles: [worker], os: ubuntu-22.04}\n"
                        "nodes:\n"
                        "  - {name: head, address: 10.0.0.10, roles: [master]}\n"
                        "  - {name: \"gpu[01-04]\", address: 10.0.0.11}\n"
                        "  - {name: gpu05, address: 10.0.0.15, os: ubuntu-24.04}\n";
  Lab lab("lfos" + std::to_string(getpid()));
  const std::string state = Trim(Shell(lab.Tool("path")).out);
  const Result up = Shell(lab.Tool("up --from " + Quote(inv.string())) + " 2>&1");
  EXPECT_NE(up.status, 0) << up.out;
  EXPECT_NE(up.out.find("node gpu05: os ubuntu-24.04 is not one the lab can build"),
            std::string::npos)
      << up.out;
  EXPECT_NE(up.out.find("ubuntu-22.04, rocky-9"), std::string::npos) << up.out;
  ASSERT_FALSE(state.empty());
  EXPECT_FALSE(fs::exists(state)) << "nothing is made";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuctl
