// GPUCTL_TRACE_SCRIPTS (src/run/script_trace.cpp): each command sent is written
// as the node reads it (exports, then the script), through the run's
// redactor, and only a file per command appears; without the variable the
// transport is the one given.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "gpuctl/run/script_trace.h"
#include "gpuctl/transport/fake_transport.h"

namespace gpuctl {
namespace {

namespace fs = std::filesystem;

class ScriptTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpuctl-trace-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = fs::path(pattern) / "trace";
  }
  void TearDown() override {
    unsetenv("GPUCTL_TRACE_SCRIPTS");
    fs::remove_all(dir_.parent_path());
  }
  fs::path dir_;
};

TEST_F(ScriptTraceTest, WritesEachCommandRedacted) {
  setenv("GPUCTL_TRACE_SCRIPTS", dir_.c_str(), 1);
  auto fake = std::make_unique<FakeTransport>();
  FakeTransport* raw = fake.get();
  auto transport = TraceScriptsFromEnv(std::move(fake));
  ASSERT_NE(transport.get(), raw);
  Redactor redactor;
  TraceRedactor(*transport, redactor);
  redactor.Add("s3cr3t-join-token");

  Endpoint endpoint;
  endpoint.node = "master1";
  auto connection = transport->Connect(endpoint);
  Command command;
  command.env["GPUCTL_JOIN_COMMAND"] = "kubeadm join --token s3cr3t-join-token";
  command.env["GPUCTL_CNI_MANIFEST"] = "http://mirror.site/kube-flannel.yml";
  command.script = "kubectl apply -f \"$GPUCTL_CNI_MANIFEST\"\n";
  EXPECT_EQ(connection->Run(command).exit_status, 0);
  EXPECT_EQ(raw->Records().size(), 1U) << "the command still reaches the node";

  std::vector<fs::path> files(fs::directory_iterator(dir_), fs::directory_iterator{});
  ASSERT_EQ(files.size(), 1U);
  EXPECT_NE(files[0].filename().string().find("-master1.sh"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(stat(files[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  std::ifstream in(files[0]);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "export GPUCTL_CNI_MANIFEST='http://mirror.site/kube-flannel.yml'\n"
            "export GPUCTL_JOIN_COMMAND='kubeadm join --token <redacted>'\n"
            "kubectl apply -f \"$GPUCTL_CNI_MANIFEST\"\n");
}

TEST_F(ScriptTraceTest, UnsetMeansTheSameTransport) {
  unsetenv("GPUCTL_TRACE_SCRIPTS");
  auto fake = std::make_unique<FakeTransport>();
  FakeTransport* raw = fake.get();
  EXPECT_EQ(TraceScriptsFromEnv(std::move(fake)).get(), raw);
  EXPECT_FALSE(fs::exists(dir_));
}

}  // namespace
}  // namespace gpuctl
