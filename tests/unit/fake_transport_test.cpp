#include "gpuctl/transport/fake_transport.h"

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

Endpoint For(const std::string& node) {
  Endpoint e;
  e.node = node;
  e.host = node + ".example";
  return e;
}

Command Script(const std::string& script) {
  Command c;
  c.script = script;
  return c;
}

TEST(FakeTransport, UnmatchedScriptsSucceedAndAreRecordedInOrder) {
  FakeTransport fake;
  auto a = fake.Connect(For("a"));
  auto b = fake.Connect(For("b"));
  Command with_env = Script("apt-get install -y x");
  with_env.env = {{"DEBIAN_FRONTEND", "noninteractive"}};
  CommandResult r = a->Run(with_env);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.out, "");
  b->Run(Script("uname -r"));
  a->Run(Script("true"));

  const auto records = fake.Records();
  ASSERT_EQ(records.size(), 3U);
  EXPECT_EQ(records[0].node, "a");
  EXPECT_EQ(records[0].command.script, "apt-get install -y x");
  EXPECT_EQ(records[0].command.env.at("DEBIAN_FRONTEND"), "noninteractive");
  EXPECT_EQ(records[1].node, "b");
  EXPECT_EQ(records[2].command.script, "true");

  const auto for_a = fake.RecordsFor("a");
  ASSERT_EQ(for_a.size(), 2U);
  EXPECT_EQ(for_a[1].command.script, "true");
  EXPECT_TRUE(fake.RecordsFor("nobody").empty());
  EXPECT_TRUE(a->Alive());
}

TEST(FakeTransport, WhenMatchesNodeAndNeedle) {
  FakeTransport fake;
  fake.When("a", "nvidia-smi", 0, "GPU 0\n");
  fake.When("*", "lsmod", 1);
  auto a = fake.Connect(For("a"));
  auto b = fake.Connect(For("b"));
  EXPECT_EQ(a->Run(Script("nvidia-smi -L")).out, "GPU 0\n");
  EXPECT_EQ(b->Run(Script("nvidia-smi -L")).out, "");  // "a" only
  EXPECT_EQ(a->Run(Script("lsmod | grep nouveau")).exit_status, 1);
  EXPECT_EQ(b->Run(Script("lsmod | grep nouveau")).exit_status, 1);
  EXPECT_EQ(b->Run(Script("echo unrelated")).exit_status, 0);
}

TEST(FakeTransport, NewestHandlerWinsAndNulloptFallsThrough) {
  FakeTransport fake;
  fake.When("*", "probe", 3, "old");
  fake.When("*", "probe", 4, "new");
  int asked = 0;
  fake.AddHandler([&](const std::string&, const Command&) -> std::optional<CommandResult> {
    ++asked;
    return std::nullopt;  // looks, then lets older handlers answer
  });
  auto a = fake.Connect(For("a"));
  CommandResult r = a->Run(Script("probe"));
  EXPECT_EQ(r.exit_status, 4);
  EXPECT_EQ(r.out, "new");
  EXPECT_EQ(asked, 1);
}

TEST(FakeTransport, HandlerSeesNodeAndEnv) {
  FakeTransport fake;
  fake.AddHandler([](const std::string& node, const Command& c) -> std::optional<CommandResult> {
    CommandResult r;
    r.exit_status = 0;
    r.out = node + ":" + (c.env.count("X") ? c.env.at("X") : "-");
    return r;
  });
  auto b = fake.Connect(For("b"));
  Command c = Script("anything");
  c.env = {{"X", "1"}};
  EXPECT_EQ(b->Run(c).out, "b:1");
}

TEST(FakeTransport, UnreachableThrowsTheKindAndCountsTheAttempt) {
  FakeTransport fake;
  fake.Unreachable("down");
  fake.Unreachable("changed", ConnectFailure::kHostKeyChanged);
  try {
    fake.Connect(For("down"));
    FAIL() << "expected TransportError";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.kind(), ConnectFailure::kUnreachable);
    EXPECT_NE(std::string(e.what()).find("down"), std::string::npos);
  }
  try {
    fake.Connect(For("changed"));
    FAIL() << "expected TransportError";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.kind(), ConnectFailure::kHostKeyChanged);
  }
  EXPECT_EQ(fake.Connects("down"), 1);
  EXPECT_NE(fake.Connect(For("up")), nullptr);
  fake.Connect(For("up"));
  EXPECT_EQ(fake.Connects("up"), 2);
  EXPECT_EQ(fake.Connects("never"), 0);
  EXPECT_TRUE(fake.Records().empty());
}

}  // namespace
}  // namespace gpuctl
