// The lab's InfiniBand tools (ibstat, ibv_devinfo, ibdev2netdev, sminfo)
// answer in the real formats for the profile's IB_PORTS, and a port named by
// ib-down is down. A port whose link is up is Initializing until a subnet
// manager answers on its rail: a switch's, or an OpenSM stand-in holding its
// entry in the lab's fabric directory; then it stays Active until its link
// trains again, whether or not that subnet manager still runs.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kIbstat = "mlnx-ofed/root/usr/sbin/ibstat";
constexpr const char* kDevinfo = "mlnx-ofed/root/usr/bin/ibv_devinfo";
constexpr const char* kNetdev = "mlnx-ofed/root/usr/bin/ibdev2netdev";
constexpr const char* kSminfo = "mlnx-ofed/root/usr/sbin/sminfo";
constexpr const char* kOpensm = "opensm/root/usr/sbin/opensm";
constexpr const char* kFabric = "srv/gpuctl-lab-ib";

// Polls `done` until it holds or 20 s pass.
bool PollFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

class IbStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    node_.Profile(
        "LAB_NODE=gpu-01\nIB_PORTS=\"mlx5_0:1:200:Active mlx5_1:1:200:Active\"\n"
        "FAULTS=\"ib-down=mlx5_1\"\n");
    // A managed switch's subnet manager, as the lab writes it.
    node_.Write(std::string(kFabric) + "/switch-sm", "15 0c42a1030099aa01 1 switch-sm\n");
  }
  // The state ibstat gives `device`'s port 1.
  std::string State(const std::string& device) const {
    const std::string out = node_.Run(kIbstat, device).out;
    const auto at = out.find("State: ");
    return at == std::string::npos ? "" : out.substr(at + 7, out.find('\n', at) - at - 7);
  }
  StandinNode node_;
};

TEST_F(IbStandin, IbstatShowsActiveAndDownPorts) {
  RunResult r = node_.Run(kIbstat, "");
  ASSERT_EQ(r.status, 0);
  std::regex ca(
      "CA '(mlx5_[01])'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware version: [0-9.]+\n"
      "\tHardware version: 0\n\tNode GUID: 0x0c42a103[0-9a-f]{8}\n"
      "\tSystem image GUID: 0x0c42a103[0-9a-f]{8}\n\tPort 1:\n\t\tState: (Active|Down)\n"
      "\t\tPhysical state: (LinkUp|Polling)\n\t\tRate: (200|10)\n\t\tBase lid: \\d+\n"
      "\t\tLMC: 0\n\t\tSM lid: \\d+\n\t\tCapability mask: 0x[0-9a-f]{8}\n"
      "\t\tPort GUID: 0x0c42a103[0-9a-f]{8}\n\t\tLink layer: InfiniBand\n");
  auto begin = std::sregex_iterator(r.out.begin(), r.out.end(), ca);
  std::vector<std::string> states;
  size_t covered = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    states.push_back((*it)[1].str() + " " + (*it)[2].str() + " " + (*it)[3].str() + " " +
                     (*it)[4].str());
    covered += static_cast<size_t>(it->length());
  }
  EXPECT_EQ(covered, r.out.size()) << r.out;
  EXPECT_EQ(states,
            (std::vector<std::string>{"mlx5_0 Active LinkUp 200", "mlx5_1 Down Polling 10"}));
  EXPECT_EQ(node_.Run(kIbstat, "-l").out, "mlx5_0\nmlx5_1\n");
  EXPECT_EQ(node_.Run(kIbstat, "").out, r.out) << "GUIDs are stable per node";
}

TEST_F(IbStandin, DevinfoAndNetdevShowPortStates) {
  RunResult info = node_.Run(kDevinfo, "");
  ASSERT_EQ(info.status, 0);
  EXPECT_NE(info.out.find("hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n"),
            std::string::npos);
  EXPECT_NE(info.out.find("\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"), std::string::npos);
  EXPECT_NE(info.out.find("\t\t\tstate:\t\t\tPORT_DOWN (1)\n"), std::string::npos);
  EXPECT_NE(info.out.find("\t\t\tlink_layer:\t\tInfiniBand\n"), std::string::npos);
  EXPECT_EQ(node_.Run(kNetdev, "").out,
            "mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port 1 ==> ib1 (Down)\n");
}

TEST_F(IbStandin, PortsStayInitializingUntilASubnetManagerAnswers) {
  std::filesystem::remove(node_.root() / kFabric / "switch-sm");
  node_.Profile("LAB_NODE=gpu-01\nIB_PORTS=\"mlx5_0:1:200:Active mlx5_1:1:200:Active\"\n");
  const std::string out = node_.Run(kIbstat, "mlx5_0").out;
  EXPECT_NE(out.find("\t\tState: Initializing\n\t\tPhysical state: LinkUp\n\t\tRate: 200\n"
                     "\t\tBase lid: 0\n\t\tLMC: 0\n\t\tSM lid: 0\n"),
            std::string::npos)
      << out;
  EXPECT_NE(node_.Run(kDevinfo, "").out.find("\t\t\tstate:\t\t\tPORT_INIT (2)\n"),
            std::string::npos);
  RunResult sm = node_.Run(kSminfo, "-C mlx5_0 -P 1", /*with_stderr=*/true);
  EXPECT_EQ(sm.status, 255);
  EXPECT_EQ(sm.out, "sminfo: iberror: failed: can't resolve sm port (null)\n");

  // An OpenSM on another node of rail mlx5_0 holds its entry: that rail's
  // ports go Active with its LID as SM lid; the other rail waits on.
  const std::filesystem::path entry = node_.root() / kFabric / "mlx5_0" / "0c42a1030000beef";
  std::filesystem::create_directories(entry.parent_path());
  const int fd = open(entry.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  const std::string line = "15 0c42a1030000beef 7 gpu-02\n";
  ASSERT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  EXPECT_EQ(State("mlx5_0"), "Active");
  EXPECT_NE(node_.Run(kIbstat, "mlx5_0").out.find("\t\tSM lid: 7\n"), std::string::npos);
  EXPECT_EQ(State("mlx5_1"), "Initializing");
  sm = node_.Run(kSminfo, "-C mlx5_0 -P 1");
  EXPECT_EQ(sm.status, 0);
  EXPECT_TRUE(std::regex_match(sm.out, std::regex("sminfo: sm lid 7 sm guid 0x0c42a1030000beef, "
                                                  "activity count \\d+ priority 15 state 3 "
                                                  "SMINFO_MASTER\n")))
      << sm.out;
  EXPECT_EQ(node_.Run(kNetdev, "").out,
            "mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port 1 ==> ib1 (Down)\n");
  // Its process gone, the lock goes with it: the entry no longer answers,
  // but the port keeps its LID while its link stays up, as on a real fabric.
  close(fd);
  EXPECT_EQ(State("mlx5_0"), "Active");
  EXPECT_NE(node_.Run(kIbstat, "mlx5_0").out.find("\t\tSM lid: 7\n"), std::string::npos);
  sm = node_.Run(kSminfo, "-C mlx5_0 -P 1", /*with_stderr=*/true);
  EXPECT_EQ(sm.status, 255);
  EXPECT_EQ(sm.out, "sminfo: iberror: failed: query\n");
  // The cable pulled and plugged back (a fault rewrites the profile): the
  // link trains again and finds no subnet manager.
  node_.Profile(
      "LAB_NODE=gpu-01\nIB_PORTS=\"mlx5_0:1:200:Active mlx5_1:1:200:Active\"\n"
      "FAULTS=ib-down=mlx5_0\n");
  EXPECT_EQ(State("mlx5_0"), "Down");
  node_.Profile("LAB_NODE=gpu-01\nIB_PORTS=\"mlx5_0:1:200:Active mlx5_1:1:200:Active\"\n");
  EXPECT_EQ(State("mlx5_0"), "Initializing");
}

TEST_F(IbStandin, OpenSmManagesItsPortsRailWhileItRuns) {
  std::filesystem::remove(node_.root() / kFabric / "switch-sm");
  node_.Profile("LAB_NODE=gpu-01\nIB_PORTS=\"mlx5_0:1:200:Active mlx5_1:1:200:Active\"\n");
  const std::string guid = [&] {
    const std::string out = node_.Run(kIbstat, "mlx5_1").out;
    const auto at = out.find("Port GUID: ");
    return out.substr(at + 11, 18);
  }();
  ASSERT_EQ(guid.rfind("0x0c42a103", 0), 0U) << guid;
  const std::string log = (node_.root() / "opensm.log").string();
  const RunResult started =
      node_.Run(kOpensm, "-g " + guid + " -p 14 -f " + log + " >/dev/null 2>&1 & echo $!");
  const pid_t pid = std::stoi(started.out);
  EXPECT_TRUE(PollFor([&] { return State("mlx5_1") == "Active"; }));
  EXPECT_EQ(State("mlx5_0"), "Initializing") << "OpenSM binds one port, one rail";
  const RunResult sm = node_.Run(kSminfo, "-C mlx5_1 -P 1");
  EXPECT_NE(sm.out.find("sm guid " + guid + ", "), std::string::npos) << sm.out;
  EXPECT_NE(sm.out.find(" priority 14 state 3 SMINFO_MASTER"), std::string::npos) << sm.out;
  EXPECT_NE(ReadFile(log).find("SUBNET UP"), std::string::npos) << ReadFile(log);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  // Stopped, it answers no more; the port it brought up stays Active until
  // its link trains again.
  EXPECT_TRUE(PollFor([&] { return node_.Run(kSminfo, "-C mlx5_1 -P 1").status == 255; }));
  EXPECT_EQ(State("mlx5_1"), "Active");
  node_.Profile("LAB_NODE=gpu-01\nIB_PORTS=\"mlx5_0:1:200:Active mlx5_1:1:200:Active\"\n");
  EXPECT_EQ(State("mlx5_1"), "Initializing");
}

TEST_F(IbStandin, NoPortsMeansNoDevices) {
  node_.Profile("LAB_NODE=cpu-01\n");
  EXPECT_EQ(node_.Run(kIbstat, "").out, "");
  EXPECT_EQ(node_.Run(kDevinfo, "").status, 255);
}

}  // namespace
}  // namespace gpuctl::testing
