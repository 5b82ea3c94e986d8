// Every inventory value that reaches a file, a path or a shell, fed hostile
// payloads through a real inventory file: each must be an error at the
// value's own line:column, no message may carry a control character raw, and
// each field's valid example must load.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::kMinimalInventory;
using testing::ParseText;

// One field: an inventory with "@@" where the value goes, and a valid value.
// `printable_ok`: the field is a path on gpuctl's own machine, handed to
// no shell, so only line breaks, control characters and length are refused.
struct Field {
  const char* name;
  std::string doc;
  std::string valid;
  bool printable_ok = false;
};

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string ValuesWith(const std::string& block) { return std::string(kMinimalInventory) + block; }

std::vector<Field> Fields() {
  const std::string inv = kMinimalInventory;
  const std::string w1_hw = "    hardware: {gpus: {model: @@, count: 8}}\n";
  return {
      {"cluster", Replace(inv, "cluster: lab", "cluster: @@"), "lab"},
      {"ssh.user", ValuesWith("ssh: {user: @@}\n"), "ubuntu"},
      {"ssh.identity_file", ValuesWith("ssh: {identity_file: @@}\n"), "keys/id_ed25519", true},
      {"ssh.known_hosts", ValuesWith("ssh: {known_hosts: @@}\n"), "lab_known_hosts", true},
      {"ssh.become_password_env", ValuesWith("ssh: {become_password_env: @@}\n"), "GPUCTL_SUDO"},
      {"ssh.jump_host", ValuesWith("ssh: {jump_host: @@}\n"), "admin@bastion:2222"},
      {"versions.driver_branch", ValuesWith("versions: {driver_branch: @@}\n"), "550"},
      {"versions.cuda", ValuesWith("versions: {cuda: @@}\n"), "12.4"},
      {"versions.cudnn", ValuesWith("versions: {cudnn: @@}\n"), "9.1"},
      {"versions.nccl", ValuesWith("versions: {nccl: @@}\n"), "2.21"},
      {"versions.ofed", ValuesWith("versions: {ofed: @@}\n"), "24.01"},
      {"versions.container_toolkit", ValuesWith("versions: {container_toolkit: @@}\n"), "1.15"},
      {"versions.kubernetes", ValuesWith("versions: {kubernetes: @@}\n"), "1.30"},
      {"versions.cni", ValuesWith("versions: {cni: @@}\n"), "flannel"},
      {"versions.gpu_operator", ValuesWith("versions: {gpu_operator: @@}\n"), "v24.3.0"},
      {"versions.slurm", ValuesWith("versions: {slurm: @@}\n"), "23.02"},
      {"network.subnet", ValuesWith("network: {subnet: @@}\n"), "198.18.0.0/24"},
      {"network.pod_cidr", ValuesWith("network: {pod_cidr: @@}\n"), "10.244.0.0/16"},
      {"network.service_cidr", ValuesWith("network: {service_cidr: @@}\n"), "10.96.0.0/12"},
      {"network.ntp_servers", ValuesWith("network: {ntp_servers: [@@]}\n"), "pool.ntp.org"},
      {"nfs.server", ValuesWith("nfs: {server: @@}\n"), "w1"},
      {"nfs.exports[].path", ValuesWith("nfs: {exports: [{path: @@}]}\n"), "/data"},
      {"nfs.exports[].clients", ValuesWith("nfs: {exports: [{path: /data, clients: @@}]}\n"),
       "10.0.0.0/8"},
      {"nfs.mounts[].export",
       ValuesWith("nfs: {exports: [{path: /data}], mounts: [{export: @@, path: /mnt/data}]}\n"),
       "/data"},
      {"nfs.mounts[].path",
       ValuesWith("nfs: {exports: [{path: /data}], mounts: [{export: /data, path: @@}]}\n"),
       "/mnt/data"},
      {"nfs.mounts[].options",
       ValuesWith("nfs:\n  exports: [{path: /data}]\n"
                  "  mounts: [{export: /data, path: /mnt/data, options: @@}]\n"),
       "rw,hard,nfsvers=4.1"},
      {"slurm.cluster_name", ValuesWith("orchestrator: slurm\nslurm: {cluster_name: @@}\n"), "lab"},
      {"slurm.partitions[].name",
       ValuesWith("orchestrator: slurm\nslurm: {partitions: [{name: @@}]}\n"), "gpu"},
      {"slurm.partitions[].nodes[]",
       ValuesWith("orchestrator: slurm\nslurm: {partitions: [{name: gpu, nodes: [@@]}]}\n"), "w1"},
      {"slurm.partitions[].max_time",
       ValuesWith("orchestrator: slurm\nslurm: {partitions: [{name: gpu, max_time: @@}]}\n"),
       "2-00:00:00"},
      {"slurm.partitions[].default_time",
       ValuesWith("orchestrator: slurm\nslurm: {partitions: [{name: gpu, default_time: @@}]}\n"),
       "60"},
      {"slurm.munge_key_env", ValuesWith("orchestrator: slurm\nslurm: {munge_key_env: @@}\n"),
       "GPUCTL_MUNGE_KEY"},
      {"nodes[].name", Replace(inv, "name: w1", "name: @@"), "w1"},
      {"nodes[].address", Replace(inv, "address: 198.18.0.11", "address: @@"), "198.18.0.11"},
      {"nodes[].ib_address", ValuesWith("    ib_address: @@\n"), "10.10.0.11"},
      {"nodes[].hardware.gpus.model", ValuesWith(w1_hw), "NVIDIA H100 80GB HBM3"},
      {"nodes[].hardware.ib[].device", ValuesWith("    hardware: {ib: [{device: @@}]}\n"),
       "mlx5_0"},
      {"validation.cuda_image", ValuesWith("validation: {cuda_image: @@}\n"),
       "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"},
      {"mirrors.cni_manifest", ValuesWith("mirrors: {cni_manifest: @@}\n"),
       "http://m.site/kube-flannel.yml"},
      {"mirrors.gpu_operator_chart", ValuesWith("mirrors: {gpu_operator_chart: @@}\n"),
       "http://m.site/charts"},
      {"mirrors.registries", ValuesWith("mirrors: {registries: {nvcr.io: @@}}\n"),
       "http://m.site:5000"},
      {"repositories.url", ValuesWith("repositories: {cuda: {url: @@}}\n"), "http://m.site/cuda"},
      {"repositories.key", ValuesWith("repositories: {cuda: {key: @@}}\n"), "/etc/keys/cuda.pub"},
      {"repositories.fingerprint", ValuesWith("repositories: {cuda: {fingerprint: @@}}\n"),
       "EB693B3035CD5710E231E123A4B469963BF863CC"},
  };
}

struct Payload {
  const char* name;
  std::string value;
  bool printable;  // refused by kinds that take any printable text?
};

// What the issue's tester and the brief name: each standalone and appended
// to the field's valid value, as an injection would be.
std::vector<Payload> Payloads(const std::string& valid) {
  return {
      {"newline", valid + "\n/ *(rw,no_root_squash)", false},
      {"carriage return", valid + "\rx", false},
      {"$( )", valid + "$(reboot)", true},
      {"backticks", valid + "`id`", true},
      {"semicolon", valid + ";reboot", true},
      {"single quote", valid + "'x", true},
      {"double quote", valid + "\"x", true},
      {"..", "..", true},
      {"/../", valid + "/../x", true},
      {"leading -", "-oProxyCommand=reboot", true},
      {"control character", valid + "\x1b[2J", false},
      {"DEL", valid + "\x7f", false},
      {"NUL", valid + std::string("\0x", 2), false},
      {"tab", valid + "\tx", true},
      {"very long", valid + std::string(5000, 'a'), false},
  };
}

// `text` as a YAML double-quoted scalar, every special character escaped.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// 1-based line and column of the "@@" in `doc`: where the value's opening
// quote will be.
std::pair<int, int> Position(const std::string& doc) {
  const std::size_t at = doc.find("@@");
  const std::size_t line_start = doc.rfind('\n', at);
  const int line = 1 + static_cast<int>(std::count(
                           doc.begin(), doc.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  const int column =
      static_cast<int>(at - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
  return {line, column};
}

bool HasRawControl(const std::string& text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) return true;
  }
  return false;
}

TEST(InventoryValues, EachFieldsValidExampleLoads) {
  for (const Field& f : Fields()) {
    const auto p = ParseText(Replace(f.doc, "@@", Quoted(f.valid)));
    EXPECT_TRUE(p.inventory) << f.name << ":\n" << p.diagnostics.Format();
  }
}

TEST(InventoryValues, EachFieldRefusesEachHostilePayloadWhereItIs) {
  for (const Field& f : Fields()) {
    const auto [line, column] = Position(f.doc);
    for (const Payload& payload : Payloads(f.valid)) {
      if (f.printable_ok && payload.printable) continue;
      const auto p = ParseText(Replace(f.doc, "@@", Quoted(payload.value)));
      EXPECT_FALSE(p.inventory) << f.name << " accepted " << payload.name;
      EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, line, column, ""))
          << f.name << " / " << payload.name;
      // Every line of `validate`'s output is one diagnostic: a payload can
      // neither add a line nor send a terminal an escape.
      for (const auto& d : p.diagnostics.All()) {
        const std::string text = d.Format();
        EXPECT_EQ(text.find('\n'), std::string::npos) << f.name << " / " << payload.name;
        EXPECT_FALSE(HasRawControl(text)) << f.name << " / " << payload.name << ": " << text;
      }
    }
  }
}

// The issue's findings, each as it was reported.
TEST(InventoryValues, TheIssuesPayloadsAreRefusedNamingTheCharacter) {
  auto p = ParseText(
      ValuesWith("nfs:\n"
                 "  exports: [{path: /data, clients: \"10.0.0.0/8\\n/ *(rw,no_root_squash)\"}]\n"
                 "  mounts: [{export: /data, path: \"/mnt/data\\n/dev/sda1 /boot ext4\"}]\n"
                 "orchestrator: slurm\n"
                 "slurm: {partitions: [{name: \"gpu\\nPartitionName=evil Nodes=ALL\"}]}\n"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 12, 36,
                                     "invalid NFS clients: an NFS client may not contain a line "
                                     "break"));
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 13, 34,
                                     "invalid NFS mount point: a path may not contain a line "
                                     "break"));
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 15, 29,
                                     "invalid partition name: may not contain a line break"));
  p = ParseText(Replace(kMinimalInventory, "cluster: lab", "cluster: \"../../../../tmp/x\""));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 1, 10,
                                     "invalid cluster name '../../../../tmp/x': may not contain "
                                     "'/'"));
}

TEST(InventoryValues, APartitionsTimesAreSlurmTimesAndItsDefaultIsWithinItsMax) {
  auto p =
      ParseText(ValuesWith("orchestrator: slurm\nslurm:\n  partitions:\n"
                           "    - {name: gpu, max_time: \"1:00:00\", default_time: \"2:00:00\"}\n"
                           "    - {name: all, max_time: 2h}\n"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 14, 54,
                                     "partition 'gpu': default_time is above its max_time "
                                     "(1:00:00), which Slurm would ignore"));
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 15, 29,
                                     "invalid partition max_time '2h': a time is UNLIMITED, "
                                     "INFINITE or numbers"));

  p =
      ParseText(ValuesWith("orchestrator: slurm\nslurm:\n  partitions:\n"
                           "    - {name: gpu, max_time: \"1-00\", default_time: \"30\"}\n"
                           "    - {name: all, default_time: UNLIMITED}\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_EQ(p.inventory->slurm->partitions[0].max_time, "1-00");
  EXPECT_EQ(p.inventory->slurm->partitions[0].default_time, "30");
  EXPECT_EQ(p.inventory->slurm->partitions[1].max_time, "");
}

TEST(InventoryValues, RootIsNeitherAnExportNorAMountPoint) {
  const auto p =
      ParseText(ValuesWith("nfs:\n  exports: [{path: /}]\n"
                           "  mounts: [{export: /, path: /}]\n"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 12, 20, "the node's whole file system"));
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 13, 21, "the node's whole file system"));
  EXPECT_TRUE(testing::HasDiagnostic(p.diagnostics, 13, 30, "the node's whole file system"));
}

}  // namespace
}  // namespace gpuctl
