// The lab's InfiniBand tools (ibstat, ibv_devinfo, ibdev2netdev) answer in the
// real formats for the profile's IB_PORTS, and a port named by ib-down is down.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kIbstat = "mlnx-ofed/root/usr/sbin/ibstat";
constexpr const char* kDevinfo = "mlnx-ofed/root/usr/bin/ibv_devinfo";
constexpr const char* kNetdev = "mlnx-ofed/root/usr/bin/ibdev2netdev";

class IbStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    node_.Profile(
        "LAB_NODE=gpu-01\nIB_PORTS=\"mlx5_0:1:200:Active mlx5_1:1:200:Active\"\n"
        "FAULTS=\"ib-down=mlx5_1\"\n");
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

TEST_F(IbStandin, NoPortsMeansNoDevices) {
  node_.Profile("LAB_NODE=cpu-01\n");
  EXPECT_EQ(node_.Run(kIbstat, "").out, "");
  EXPECT_EQ(node_.Run(kDevinfo, "").status, 255);
}

}  // namespace
}  // namespace gpuctl::testing
