// Each value kind (include/gpuctl/model/value_kinds.h) against what it must accept
// and what it must refuse, and how a refused character reads in a message.
#include "gpuctl/model/value_kinds.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

using Kind = std::string (*)(std::string_view);

struct KindCase {
  const char* name;
  Kind kind;
  std::vector<std::string> valid;
  std::vector<std::string> invalid;
};

// Hostile payloads no kind accepts: a line break, command substitution,
// backticks, a command separator, quotes, `..`, a leading '-', control
// characters, a NUL, nothing, and a value far beyond any limit.
std::vector<std::string> Hostile() {
  return {"a\nb",  "$(reboot)",
          "`id`",  ";reboot",
          "a'b",   "a\"b",
          "..",    "-rf",
          "a\x01", std::string("a\0b", 3),
          "a\x7f", "a\rb",
          "",      std::string(5000, 'a')};
}

// The same appended to a valid value, as an injection would be.
std::vector<std::string> Injections() {
  return {"\nx",     "$(reboot)", "`id`",
          ";reboot", "'x",        "\"x",
          "/../x",   "\x01",      std::string("\0x", 2),
          "\x7f",    "\rx",       std::string(5000, 'a')};
}

std::vector<KindCase> Cases() {
  return {
      {"host name",
       HostNameProblem,
       {"w1", "worker-1", "node1.lab.example", std::string(63, 'a')},
       {"w_1", "-w1", "w1-", "10.0.0.1", "a..b", std::string(64, 'a'), "w1.", "a b"}},
      {"address",
       AddressProblem,
       {"198.18.0.10", "fd00::1", "::1", "node1.lab"},
       {"198.18.0.300", "10.0.0.1 x", "[fd00::1]", "not_a_host", "10.0.0.1/24"}},
      {"CIDR",
       CidrProblem,
       {"10.244.0.0/16", "fd00::/64", "0.0.0.0/0"},
       {"10.0.0.0", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/8 ", "x/8"}},
      {"NFS client",
       NfsClientProblem,
       {"*", "10.0.0.0/8", "10.0.0.5", "fd00::/64", "10.0.0.0/255.0.0.0", "node1.lab",
        "*.lab.example", "node?", "@compute", "storage-clients"},
       {"10.0.0.0/8(rw)", "* 10.0.0.0/8", "@", "@-x", "host/..", "a:b", "10.0.0.0/8,x"}},
      {"mount options",
       MountOptionsProblem,
       {"rw,hard,nfsvers=4.1", "ro", "_netdev,x-systemd.automount", "addr=fd00::1",
        "sec=krb5p,timeo=600"},
       {"rw,,hard", "rw,", "=x", "nfsvers=", "a=b=c", "rw hard", "context=/x", "1rw"}},
      {"absolute path",
       AbsolutePathProblem,
       {"/", "/data/shared", "/srv/nfs/v1.2", "/mnt/a:b", "/home/~user/x%20y"},
       {"data", "/data/../etc", "/data/..", "/a b", "/a*", "/a?", "/a#b", "/a\\b",
        "/" + std::string(5000, 'a')}},
      {"Slurm name",
       SlurmNameProblem,
       {"gpu", "a100", "batch_1", "debug-short", "v1.2"},
       {"gpu part", "gpu,cpu", "gpu=x", ".hidden", "_x", std::string(65, 'a'), "a/b"}},
      {"Slurm time",
       SlurmTimeProblem,
       {"UNLIMITED", "infinite", "60", "30:30", "12:00:00", "72:00:00", "2-00", "2-12:30",
        "7-23:59:59"},
       {"", "1h", "2-24", "10:60", "1:60:00", "1:2:3:4", "-5", "1--2", "12345678", "2 days",
        "60\nPartitionName=x", "UNLIMITED;"}},
      {"cluster name",
       ClusterNameProblem,
       {"seed", "seed-slurm", "lab_1", "c.1"},
       {".", "../../../../tmp/x", "a/b", ".x", "-x", std::string(65, 'a')}},
      {"IB device",
       IbDeviceProblem,
       {"mlx5_0", "mlx5_bond_0", "irdma0", "rxe0", "hfi1_0"},
       {"0mlx", "mlx5_0:1", "mlx5 0", std::string(65, 'm')}},
      {"GPU model",
       GpuModelProblem,
       {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB",
        "NVIDIA GeForce RTX 4090", "NVIDIA A100 80GB PCIe (MIG)"},
       {" NVIDIA", "NVIDIA ", "NVIDIA  H100", "NVIDIA,H100", "NVIDIA/H100", "a\tb",
        std::string(97, 'A')}},
      {"version",
       VersionProblem,
       {"12.4", "550.54.14", "v24.3.0", "2.21.5-1", "1.30", "flannel", "1.0+cuda12.4", "2.0~rc1"},
       {"1..2", ".1", "1 2", "1/2", std::string(65, '1')}},
      {"interface name",
       InterfaceNameProblem,
       {"eth0", "ib0", "enp65s0f0", "bond0.100", "br-lab"},
       {"eth0:1", "a/b", std::string(16, 'e'), ".x"}},
      {"environment variable name",
       EnvVarNameProblem,
       {"GPUCTL_MUNGE_KEY", "_X", "a1"},
       {"1X", "A-B", "A B", std::string(129, 'A')}},
      {"user name",
       UserNameProblem,
       {"root", "ubuntu", "rocky", "svc_gpu", "first.last", "_apt"},
       {"a b", "a@b", ".x", std::string(33, 'u')}},
      {"URL",
       UrlProblem,
       {"http://mirror.site/cuda", "https://10.0.0.5:8443/x", "http://m.site:5000"},
       {"ftp://m.site", "http://", "http://user@m.site", "http://m.site:0", "http://m.site/../x",
        "http://m.site/a b", "https://m.site/" + std::string(3000, 'a')}},
      {"image reference",
       ImageReferenceProblem,
       {"nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "ubuntu", "nvidia/cuda:12.1.1-base",
        "registry.site:5000/nvidia/cuda:12.4.1-base-ubuntu22.04", "localhost/cuda",
        "nvcr.io/nvidia/cuda@sha256:" + std::string(64, 'a'), "my_org/cuda-base:V1.0"},
       {"Nvidia/cuda", "nvcr.io/nvidia/cuda:", "cuda:-x", "reg.site:0/cuda", "a//b",
        "cuda@sha256:xyz", "cuda:" + std::string(129, 'a'), "cuda:a b", "nvcr.io/"}},
  };
}

TEST(ValueKinds, EachKindAcceptsItsExamples) {
  for (const KindCase& c : Cases()) {
    for (const std::string& v : c.valid) {
      EXPECT_EQ(c.kind(v), "") << c.name << ": '" << v << "'";
    }
  }
}

TEST(ValueKinds, EachKindRefusesBadValuesAndEveryHostilePayload) {
  for (const KindCase& c : Cases()) {
    std::vector<std::string> bad = c.invalid;
    for (const std::string& h : Hostile()) bad.push_back(h);
    for (const std::string& i : Injections()) bad.push_back(c.valid.front() + i);
    for (const std::string& v : bad) {
      const std::string problem = c.kind(v);
      EXPECT_NE(problem, "") << c.name << " accepted '" << v << "'";
      // A problem names a character, never carries one raw.
      for (char ch : problem) {
        EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
            << c.name << ": raw control character in: " << problem;
      }
    }
  }
}

TEST(ValueKinds, ProblemsNameTheOffendingCharacter) {
  EXPECT_EQ(AbsolutePathProblem("/data\n/ *(rw)"), "a path may not contain a line break");
  EXPECT_EQ(AbsolutePathProblem("/data/$(reboot)"), "a path may not contain '$'");
  EXPECT_EQ(AbsolutePathProblem("/data/../etc"), "a path may not contain '..'");
  EXPECT_NE(NfsClientProblem("10.0.0.0/8\n/ *").find("a line break"), std::string::npos);
  EXPECT_NE(SlurmNameProblem("gpu\nPartitionName=evil").find("a line break"), std::string::npos);
  EXPECT_NE(GpuModelProblem("A100`id`").find("'`'"), std::string::npos);
  EXPECT_NE(MountOptionsProblem("rw;reboot").find("';'"), std::string::npos);
  EXPECT_NE(ClusterNameProblem("../../../../tmp/x").find("'/'"), std::string::npos);
  EXPECT_NE(VersionProblem(std::string("1\0", 2)).find("a NUL character"), std::string::npos);
}

TEST(ValueKinds, SlurmTimesInMinutesRoundSecondsUpAsSlurmDoes) {
  EXPECT_EQ(SlurmTimeMinutes("60"), 60);
  EXPECT_EQ(SlurmTimeMinutes("30:30"), 31);
  EXPECT_EQ(SlurmTimeMinutes("12:00:00"), 720);
  EXPECT_EQ(SlurmTimeMinutes("2-00"), 2880);
  EXPECT_EQ(SlurmTimeMinutes("1-01:01"), 1501);
  EXPECT_EQ(SlurmTimeMinutes("1-01:01:01"), 1502);
  EXPECT_EQ(SlurmTimeMinutes("Unlimited"), -1);
  EXPECT_EQ(SlurmTimeMinutes("INFINITE"), -1);
}

TEST(ValueKinds, DescribeCharAndShownValue) {
  EXPECT_EQ(DescribeChar('\n'), "a line break");
  EXPECT_EQ(DescribeChar('\r'), "a line break");
  EXPECT_EQ(DescribeChar('\t'), "whitespace");
  EXPECT_EQ(DescribeChar('\0'), "a NUL character");
  EXPECT_EQ(DescribeChar('\x1b'), "a control character (0x1b)");
  EXPECT_EQ(DescribeChar('\x7f'), "a control character (0x7f)");
  EXPECT_EQ(DescribeChar('\xc3'), "a non-ASCII character");
  EXPECT_EQ(DescribeChar('$'), "'$'");
  EXPECT_EQ(ShownValue("w_1"), " 'w_1'");
  EXPECT_EQ(ShownValue("a\nb"), "");
  EXPECT_EQ(ShownValue("a\x1b[2Jb"), "");
  EXPECT_EQ(ShownValue(std::string(65, 'a')), "");
}

}  // namespace
}  // namespace gpuctl
