// The lab's perftest (ib_send_bw) and Open MPI launcher (mpirun) stand-ins:
// a server and a client really meet on TCP and report the slower end's
// modelled rate in perftest's format; a down port fails as perftest does;
// mpirun starts ranks with the OMPI_COMM_WORLD_* variables, and the
// nccl-tests ranks it starts meet so that only rank 0 prints, for all ranks.
#include <unistd.h>

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kSendBw = "perftest/root/usr/bin/ib_send_bw";

// The shell command that runs `tool` as `node` (StandinNode::Run's, without
// running it), so that a test can start two ends in one shell.
std::string As(const StandinNode& node, const std::string& tool, const std::string& args) {
  return "GPUCTL_LAB_ROOT=" + Quote(node.root().string()) +
         " GPUCTL_LAB_PROFILE=" + Quote((node.root() / "etc/gpuctl-lab/profile.env").string()) +
         " PYTHONPATH=" +
         Quote((StandinsDir() / "gpuctl-lab-common/root/usr/lib/gpuctl-lab/python").string()) +
         " /usr/bin/python3 " + Quote((StandinsDir() / tool).string()) + " " + args;
}

class PerftestStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    port_ = std::to_string(20000 + getpid() % 20000);
    server_.Profile("LAB_NODE=w1\nIB_PORTS=\"mlx5_0:1:200:Active mlx5_1:1:200:Active\"\n");
    client_.Profile("LAB_NODE=w2\nIB_PORTS=\"mlx5_0:1:400:Active mlx5_1:1:400:Active\"\n");
    // The fabric's subnet manager: a managed switch's, as the lab writes it.
    for (const StandinNode* node : {&server_, &client_}) {
      node->Write("srv/gpuctl-lab-ib/switch-sm", "15 0c42a1030099aa01 1 switch-sm\n");
    }
  }
  // Starts the server in the background, then the client, retrying while the
  // server does not listen yet (a bounded poll); prints the client's output,
  // then "--server--" and the server's.
  RunResult Pair(const std::string& args) const {
    const std::string out = (server_.root() / "server.out").string();
    return RunShell(As(server_, kSendBw, args + " -p " + port_) + " >" + Quote(out) +
                    " 2>&1 & i=0; until " + As(client_, kSendBw, args + " -p " + port_) +
                    " 127.0.0.1 2>/dev/null; do i=$((i+1)); [ $i -lt 100 ] || break; sleep 0.05; "
                    "done; wait $!; echo --server--; cat " +
                    Quote(out));
  }
  std::string port_;
  StandinNode server_;
  StandinNode client_;
};

double Average(const std::string& out) {
  std::smatch m;
  std::regex row(
      R"(\n #bytes     #iterations    BW peak\[Gb/sec\]    BW average\[Gb/sec\]   )"
      R"(MsgRate\[Mpps\]\n 65536      1000 +[0-9.]+ +([0-9.]+) *\t\t   [0-9.]+\n-{87}\n)");
  return std::regex_search(out, m, row) ? std::stod(m[1].str()) : -1;
}

TEST_F(PerftestStandin, APairMeetsAndReportsTheSlowerEndsRate) {
  const RunResult r = Pair("-d mlx5_0 -F --report_gbits");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto split = r.out.find("--server--");
  ASSERT_NE(split, std::string::npos);
  const std::string client = r.out.substr(0, split);
  const std::string server = r.out.substr(split);
  // 200 Gb/s (the server's HDR port) x 0.982, at 64 KiB nearly all of it.
  EXPECT_NEAR(Average(client), 193.5, 2.5) << client;
  EXPECT_NEAR(Average(server), 193.5, 2.5) << server;
  EXPECT_NE(client.find("                    Send BW Test\n Dual-port       : OFF\t\tDevice"
                        "         : mlx5_0\n"),
            std::string::npos)
      << client;
  EXPECT_NE(server.find("* Waiting for client to connect... *"), std::string::npos) << server;
  // Each end's remote address is the other's local one.
  std::smatch local;
  ASSERT_TRUE(std::regex_search(server, local, std::regex(" local address: (LID .*)\n")));
  EXPECT_NE(client.find(" remote address: " + local[1].str()), std::string::npos) << client;
}

TEST_F(PerftestStandin, ADownPortFailsWithPerftestsMessage) {
  server_.Profile("LAB_NODE=w1\nIB_PORTS=\"mlx5_0:1:200:Active\"\nFAULTS=\"ib-down=mlx5_0\"\n");
  const RunResult r = server_.Run(kSendBw, "-d mlx5_0 --report_gbits", true);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(Lines(r.out).at(0), " Port number 1 state is Down") << r.out;
  // A port whose link is up but which no subnet manager brought up.
  std::filesystem::remove(client_.root() / "srv/gpuctl-lab-ib/switch-sm");
  const RunResult init = client_.Run(kSendBw, "-d mlx5_1 --report_gbits", true);
  EXPECT_EQ(init.status, 1);
  EXPECT_EQ(Lines(init.out).at(0), " Port number 1 state is Initializing") << init.out;
  const RunResult missing = server_.Run(kSendBw, "-d mlx5_7", true);
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(Lines(missing.out).at(0), "IB device mlx5_7 not found") << missing.out;
}

TEST_F(PerftestStandin, AClientWithoutServerCannotConnect) {
  const RunResult r = client_.Run(kSendBw, "-p " + port_ + " 127.0.0.1", true);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(Lines(r.out).at(0), "Couldn't connect to 127.0.0.1:" + port_) << r.out;
}

class MpirunStandin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
    node_.Driver("550.127.05");
    node_.Write("usr/lib/gpuctl-lab/nvidia/nvml-version", "550.127.05\n");
    node_.Write("etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n");
    node_.Profile(
        "LAB_NODE=gpu-01\nGPU_MODEL=H100\nGPU_COUNT=8\n"
        "IB_PORTS=\"mlx5_0:1:400:Active mlx5_1:1:400:Active\"\n");
    ASSERT_EQ(node_.Run("nvidia-dkms/root/usr/lib/gpuctl-lab/driver-state", "--load").status, 0);
  }
  // mpirun from the source tree, with nccl-tests' commands on PATH.
  RunResult Mpirun(const std::string& args) const {
    return RunShell("PATH=" + Quote((StandinsDir() / "nccl-tests/root/usr/bin").string()) +
                    ":$PATH " + As(node_, "openmpi/root/usr/bin/mpirun", args) + " 2>&1");
  }
  StandinNode node_;
};

TEST_F(MpirunStandin, RanksMeetAndOnlyRankZeroPrintsForAll) {
  const RunResult r =
      Mpirun("--allow-run-as-root -np 2 -H localhost:2 all_reduce_perf -b 1G -e 1G -g 8");
  ASSERT_EQ(r.status, 0) << r.out;
  std::set<std::string> pids;
  int ranks = 0;
  std::regex rank(R"(#  Rank +\d+ Group  0 Pid +(\d+) on +\S+ device +\d \[0x[0-9a-f]{2}\] )"
                  R"(NVIDIA H100 80GB HBM3)");
  for (const auto& line : Lines(r.out)) {
    std::smatch m;
    if (std::regex_match(line, m, rank)) {
      ++ranks;
      pids.insert(m[1].str());
    }
  }
  EXPECT_EQ(ranks, 16) << r.out;
  EXPECT_EQ(pids.size(), 2U) << r.out;  // two processes, eight GPUs each
  EXPECT_EQ(r.out.find("# Avg bus bandwidth"), r.out.rfind("# Avg bus bandwidth")) << r.out;
}

TEST_F(MpirunStandin, RefusesRootWithoutTheFlagAndTooFewSlots) {
  if (geteuid() == 0) {
    const RunResult root = Mpirun("-np 1 true");
    EXPECT_EQ(root.status, 1);
    EXPECT_NE(root.out.find("mpirun has detected an attempt to run as root."), std::string::npos)
        << root.out;
  }
  const RunResult slots = Mpirun("--allow-run-as-root -np 3 -H localhost:2 true");
  EXPECT_EQ(slots.status, 1);
  EXPECT_NE(slots.out.find("There are not enough slots available in the system to satisfy the 3"),
            std::string::npos)
      << slots.out;
}

}  // namespace
}  // namespace gpuctl::testing
