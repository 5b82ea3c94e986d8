// nvidia-ctk runtime configure really edits containerd's config, idempotently,
// keeping runc's options for the nvidia runtime as the real tool does.
#include <gtest/gtest.h>

#include <string>

#include "standin_node.h"

namespace gpuctl::testing {
namespace {

constexpr const char* kCtk = "nvidia-container-toolkit/root/usr/bin/nvidia-ctk";

TEST(ContainerToolkitStandin, ConfiguresContainerdIdempotently) {
  if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
  StandinNode node;
  node.Write("config.toml",
             "# containerd config, as an admin left it\n"
             "version = 2\n\n"
             "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
             "  runtime_type = \"io.containerd.runc.v2\"\n"
             "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
             "    SystemdCgroup = true\n");
  std::string config = (node.root() / "config.toml").string();
  std::string args = "runtime configure --runtime=containerd --set-as-default --config=" + config;
  RunResult first = node.Run(kCtk, args, true);
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_NE(first.out.find("Wrote updated config to " + config), std::string::npos);
  std::string after_first = ReadFile(config);
  const std::string nvidia =
      "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
      "          runtime_type = \"io.containerd.runc.v2\"\n\n"
      "          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
      "            BinaryName = \"/usr/bin/nvidia-container-runtime\"\n"
      "            SystemdCgroup = true\n";
  EXPECT_NE(after_first.find(nvidia), std::string::npos) << after_first;
  EXPECT_NE(after_first.find("      default_runtime_name = \"nvidia\"\n"), std::string::npos);
  EXPECT_NE(after_first.find("runtimes.runc.options]\n            SystemdCgroup = true\n"),
            std::string::npos)
      << "runc stays";

  ASSERT_EQ(node.Run(kCtk, args).status, 0);
  EXPECT_EQ(ReadFile(config), after_first) << "a second run changes nothing";
}

TEST(ContainerToolkitStandin, CreatesAMissingConfigAndPrintsVersion) {
  if (!HavePython()) GTEST_SKIP() << "/usr/bin/python3 missing: the stand-ins need it";
  StandinNode node;
  std::string config = (node.root() / "etc/containerd/config.toml").string();
  ASSERT_EQ(node.Run(kCtk, "runtime configure --runtime=containerd --config " + config).status, 0);
  std::string text = ReadFile(config);
  EXPECT_EQ(text.rfind("version = 2\n", 0), 0U) << text;
  EXPECT_NE(text.find("BinaryName = \"/usr/bin/nvidia-container-runtime\""), std::string::npos);
  EXPECT_EQ(text.find("default_runtime_name"), std::string::npos);
  EXPECT_EQ(node.Run(kCtk, "--version").out.rfind("NVIDIA Container Toolkit CLI version ", 0), 0U);
}

}  // namespace
}  // namespace gpuctl::testing
