// The container steps' probes (playbooks/40-containers.yaml) read containerd's
// effective configuration as the real containerd 1.6.20 prints it
// (`containerd config dump`, captured in the lab: tests/fixtures/containerd/).
// The GPU Operator's edits must not make gpuctl want a change: the probes
// judge only the keys gpuctl owns.
#include <gtest/gtest.h>

#include "support/step_harness.h"

namespace gpuctl {
namespace {

using testing::StepHarness;

std::string ContainersInventory(const std::string& toolkit) {
  return "cluster: t\nversions: {container_toolkit: \"" + toolkit +
         "\"}\nnodes:\n"
         "  - {name: m, address: 198.18.0.9, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: u\n    address: 198.18.0.1\n    os: ubuntu-22.04\n    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}}\n"
         "  - name: r\n    address: 198.18.0.2\n    os: rocky-9\n    roles: [worker]\n"
         "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}}\n";
}

// A node whose containerd is installed, enabled and running since `since`,
// with `dump` (a fixture) as its effective configuration and a config.toml
// last written at `mtime` (epoch seconds).
void Node(StepHarness& h, const std::string& dump, const std::string& toolkit_version = "1.17.8-1",
          long mtime = 1700000000) {
  h.SetEnv("STUB_DUMP", StepHarness::Fixture("containerd/" + dump));
  h.SetEnv("STUB_MTIME", std::to_string(mtime));
  h.SetEnv("STUB_ACTIVE", "0");
  h.Stub("containerd",
         "[ \"$1 $2\" = 'config dump' ] || exit 1\n"
         "[ -n \"$STUB_DUMP_FAILS\" ] && { echo \"$STUB_DUMP_FAILS\" >&2; exit 1; }\n"
         "cat \"$STUB_DUMP\"");
  // 2023-11-14 22:13:20 UTC = 1700000000: containerd started at the mtime.
  h.Stub("systemctl",
         "case \"$1\" in\n"
         "  is-enabled) exit 0 ;;\n"
         "  is-active) exit \"$STUB_ACTIVE\" ;;\n"
         "  show) echo 'Tue 2023-11-14 22:13:20 UTC' ;;\n"
         "esac");
  h.Stub("stat", "echo \"$STUB_MTIME\"");
  h.Stub("dpkg-query", "case \"$*\" in *Status*) printf 'install ok installed' ;; *) printf '" +
                           toolkit_version + "' ;; esac");
  h.Stub("rpm", "case \"$*\" in *--qf*) printf '" + toolkit_version + "' ;; esac; exit 0");
}

TEST(ContainerdStepTest, DebianPackageConfigNeedsSystemdCgroup) {
  // Debian's own /etc/containerd/config.toml leaves runc on cgroupfs.
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-debian-package-1.6.20.toml");
  const auto run = h.Probe("containers.containerd", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("runc's SystemdCgroup is false"), std::string::npos) << run.out;
}

TEST(ContainerdStepTest, DockerOnAptWantsDockersContainerdInPlaceOfUbuntus) {
  // docker-ce depends on containerd.io, which conflicts with Ubuntu's
  // containerd: with Docker the apt node's containerd is the wrong package.
  StepHarness h(ContainersInventory("1.17") + "policy: {docker: true}\n");
  Node(h, "dump-gpuctl-1.6.20.toml");
  h.Stub("dpkg-query",
         "for p; do :; done\n[ \"$p\" = containerd ] || exit 1\n"
         "case \"$*\" in *Status*) printf 'install ok installed' ;; *) printf 1.6.20 ;; esac");
  auto run = h.Probe("containers.containerd", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out,
            "Ubuntu's containerd is installed: Docker needs Docker's containerd.io in its place "
            "(they conflict)\n");

  // Without Docker, Ubuntu's containerd is the one; so is a containerd.io
  // already there (turning Docker off removes nothing).
  StepHarness plain(ContainersInventory("1.17"));
  Node(plain, "dump-gpuctl-1.6.20.toml");
  plain.Stub("dpkg-query",
             "for p; do :; done\n[ \"$p\" = containerd.io ] || exit 1\n"
             "case \"$*\" in *Status*) printf 'install ok installed' ;; *) printf 1.6.20 ;; esac");
  run = plain.Probe("containers.containerd", "u");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(ContainerdStepTest, GpuctlConfigIsDoneOnBothFamilies) {
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-gpuctl-1.6.20.toml");
  for (const char* node : {"u", "r"}) {
    const auto run = h.Probe("containers.containerd", node);
    EXPECT_EQ(run.status, 0) << node << ": " << run.out;
  }
}

TEST(ContainerdStepTest, GpuOperatorEditsNeedNoChange) {
  // The operator added its runtimes, repointed nvidia at its own binary and
  // made it the default: none of that is gpuctl's, so nothing to do.
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-gpu-operator-1.6.20.toml");
  const auto containerd = h.Probe("containers.containerd", "u");
  EXPECT_EQ(containerd.status, 0) << containerd.out;
  const auto toolkit = h.Probe("containers.nvidia-toolkit", "u");
  EXPECT_EQ(toolkit.status, 0) << toolkit.out;
}

TEST(ContainerdStepTest, DockerPlaceholderConfigDisablesCri) {
  // containerd.io's placeholder: disabled_plugins = ["cri"] in a version 1
  // file, so the CRI plugin's runc options are not even there.
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-containerd-io-1.6.20.toml");
  const auto run = h.Probe("containers.containerd", "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("SystemdCgroup is unset"), std::string::npos) << run.out;
}

TEST(ContainerdStepTest, NamesARestartPendingAndAStoppedDaemon) {
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-gpuctl-1.6.20.toml", "1.17.8-1", 1700000001);
  auto run = h.Probe("containers.containerd", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("changed after containerd started (restart pending)"), std::string::npos)
      << run.out;

  h.SetEnv("STUB_ACTIVE", "3");
  run = h.Probe("containers.containerd", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("containerd is not running"), std::string::npos) << run.out;
}

TEST(ContainerdStepTest, NamesAConfigContainerdCannotLoad) {
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-gpuctl-1.6.20.toml");
  h.SetEnv(
      "STUB_DUMP_FAILS",
      "containerd: failed to load TOML from /etc/containerd/config.toml: invalid plugin key URI "
      "\"cri\" expect io.containerd.x.vx");
  const auto run = h.Probe("containers.containerd", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("containerd cannot load its configuration: containerd: failed to load"),
            std::string::npos)
      << run.out;
}

TEST(NvidiaToolkitStepTest, NvidiaCtkRuntimeIsDone) {
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-nvidia-ctk-1.6.20.toml");
  for (const char* node : {"u", "r"}) {
    const auto run = h.Probe("containers.nvidia-toolkit", node);
    EXPECT_EQ(run.status, 0) << node << ": " << run.out;
  }
}

TEST(NvidiaToolkitStepTest, NamesAMissingRuntime) {
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-gpuctl-1.6.20.toml");
  const auto run = h.Probe("containers.nvidia-toolkit", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("containerd has no nvidia runtime"), std::string::npos) << run.out;
}

TEST(NvidiaToolkitStepTest, NamesTheWrongRelease) {
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "dump-nvidia-ctk-1.6.20.toml", "1.16.2-1");
  const auto run = h.Probe("containers.nvidia-toolkit", "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("nvidia-container-toolkit 1.16.2-1 is installed, want 1.17"),
            std::string::npos)
      << run.out;
  // "1.1" is not a prefix match for 1.16.2: releases compare by component.
  StepHarness h2(ContainersInventory("1.1"));
  Node(h2, "dump-nvidia-ctk-1.6.20.toml", "1.16.2-1");
  EXPECT_EQ(h2.Probe("containers.nvidia-toolkit", "u").status, 1);
}

TEST(ContainerdStepTest, ReadsContainerd2PluginPath) {
  // containerd 2.x (config version 3) keeps the CRI runtimes under
  // io.containerd.cri.v1.runtime; written from containerd 2.0's documented
  // `config default` layout (no 2.x binary in the lab).
  StepHarness h(ContainersInventory("1.17"));
  Node(h, "config-default-2.0-documented.toml");
  const auto run = h.Probe("containers.containerd", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("runc's SystemdCgroup is false"), std::string::npos) << run.out;
  // The sample has nvidia-ctk's runtime, found under the 2.x path.
  const auto toolkit = h.Probe("containers.nvidia-toolkit", "u");
  EXPECT_EQ(toolkit.status, 0) << toolkit.out;
}

// containers.docker reads the runtimes line of `docker info` (the real CLI's
// layout; tests/fixtures/docker/README.md says where the samples come from).
std::string DockerInventory(int gpus) {
  const std::string hardware =
      gpus > 0 ? "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: " +
                     std::to_string(gpus) + "}}\n"
               : "";
  return "cluster: t\npolicy: {docker: true}\nnodes:\n"
         "  - {name: m, address: 198.18.0.9, os: ubuntu-22.04, roles: [master]}\n"
         "  - name: u\n    address: 198.18.0.1\n    os: ubuntu-22.04\n    roles: [worker]\n" +
         hardware;
}

TEST(DockerStepTest, NvidiaRuntimeListedIsDone) {
  StepHarness h(DockerInventory(8));
  Node(h, "dump-gpuctl-1.6.20.toml");
  h.StubFixture("docker", "docker/info-nvidia.txt");
  const auto run = h.Probe("containers.docker", "u");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST(DockerStepTest, NamesTheRuntimesWithoutNvidia) {
  StepHarness h(DockerInventory(8));
  Node(h, "dump-gpuctl-1.6.20.toml");
  h.StubFixture("docker", "docker/info-runc-only.txt");
  const auto run = h.Probe("containers.docker", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("docker's runtimes are 'io.containerd.runc.v2 runc', no nvidia"),
            std::string::npos)
      << run.out;

  // A node without GPUs needs no nvidia runtime.
  StepHarness cpu(DockerInventory(0));
  Node(cpu, "dump-gpuctl-1.6.20.toml");
  cpu.StubFixture("docker", "docker/info-runc-only.txt");
  EXPECT_EQ(cpu.Probe("containers.docker", "u").status, 0);
}

TEST(DockerStepTest, ADaemonStartedBeforeTheToolkitWasInstalledNeedsARestart) {
  if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  // docker became active at 1700000000; dpkg wrote the toolkit's file list at
  // `installed`.
  const auto probe = [](long installed) {
    StepHarness h(DockerInventory(8));
    Node(h, "dump-gpuctl-1.6.20.toml", "1.17.8-1", installed);
    h.File("/var/lib/dpkg/info/nvidia-container-toolkit.list", "/usr/bin/nvidia-ctk\n");
    h.StubFixture("docker", "docker/info-nvidia.txt");
    return h.Probe("containers.docker", "u");
  };
  const auto after = probe(1700000100);
  EXPECT_EQ(after.status, 1);
  EXPECT_EQ(after.out,
            "docker started before nvidia-container-toolkit was installed: no device driver for "
            "--gpus until docker restarts\n");
  const auto before = probe(1699999900);
  EXPECT_EQ(before.status, 0) << before.out;
}

TEST(DockerStepTest, NamesAnUnreachableDaemon) {
  StepHarness h(DockerInventory(8));
  Node(h, "dump-gpuctl-1.6.20.toml");
  h.StubFixture("docker", "docker/info-no-daemon.txt", 1);
  const auto run = h.Probe("containers.docker", "u");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("docker info fails: Cannot connect to the Docker daemon"),
            std::string::npos)
      << run.out;
}

// containers.registry-mirrors compares each registry's hosts.toml with what
// the inventory names (containerd's documented format) and reads the CRI
// registry config_path from the real containerd's `config dump`.
std::string MirrorInventory(const std::string& registries) {
  return "cluster: t\nmirrors:\n  registries: " + registries +
         "\nnodes:\n"
         "  - {name: m, address: 198.18.0.9, os: ubuntu-22.04, roles: [master]}\n"
         "  - {name: r, address: 198.18.0.2, os: rocky-9, roles: [worker]}\n";
}

std::string HostsToml(const std::string& server, const std::string& mirror) {
  return "# gpuctl: containers.registry-mirrors (inventory mirrors.registries)\n"
         "server = \"" +
         server + "\"\n\n[host.\"" + mirror + "\"]\n  capabilities = [\"pull\", \"resolve\"]\n";
}

TEST(RegistryMirrorsStepTest, WrittenFilesAndConfigPathAreDone) {
  if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(
      MirrorInventory("{nvcr.io: \"http://mirror.site:5000\", docker.io: "
                      "\"https://mirror.site/dockerhub\"}"));
  Node(h, "dump-registry-mirrors-1.6.20.toml");
  h.File("/etc/containerd/certs.d/nvcr.io/hosts.toml",
         HostsToml("https://nvcr.io", "http://mirror.site:5000"));
  // docker.io's registry API lives at registry-1.docker.io.
  h.File("/etc/containerd/certs.d/docker.io/hosts.toml",
         HostsToml("https://registry-1.docker.io", "https://mirror.site/dockerhub"));
  for (const char* node : {"m", "r"}) {
    const auto run = h.Probe("containers.registry-mirrors", node);
    EXPECT_EQ(run.status, 0) << node << ": " << run.out;
  }
}

TEST(RegistryMirrorsStepTest, NamesTheRegistryWhoseFileDiffers) {
  if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(MirrorInventory("{\"*\": \"http://mirror.site:5000\"}"));
  Node(h, "dump-registry-mirrors-1.6.20.toml");
  for (const char* r : {"docker.io", "ghcr.io", "nvcr.io", "quay.io", "registry.k8s.io"}) {
    const std::string server =
        std::string("https://") + (std::string(r) == "docker.io" ? "registry-1.docker.io" : r);
    // quay.io still points at an old mirror.
    h.File(std::string("/etc/containerd/certs.d/") + r + "/hosts.toml",
           HostsToml(server, std::string(r) == "quay.io" ? "http://old.site:5000"
                                                         : "http://mirror.site:5000"));
  }
  const auto run = h.Probe("containers.registry-mirrors", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("/etc/containerd/certs.d/quay.io/hosts.toml differs from the inventory's "
                         "mirror for quay.io (http://mirror.site:5000)"),
            std::string::npos)
      << run.out;
}

TEST(RegistryMirrorsStepTest, NamesAMissingFileAndAStaleOne) {
  if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(MirrorInventory("{nvcr.io: \"http://mirror.site:5000\"}"));
  Node(h, "dump-registry-mirrors-1.6.20.toml");
  auto run = h.Probe("containers.registry-mirrors", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("/etc/containerd/certs.d/nvcr.io/hosts.toml is missing (nvcr.io through "
                         "http://mirror.site:5000)"),
            std::string::npos)
      << run.out;

  // A file gpuctl wrote for a registry the inventory dropped must go; an
  // admin's own file for it is not gpuctl's business.
  h.File("/etc/containerd/certs.d/nvcr.io/hosts.toml",
         HostsToml("https://nvcr.io", "http://mirror.site:5000"));
  h.File("/etc/containerd/certs.d/ghcr.io/hosts.toml",
         HostsToml("https://ghcr.io", "http://mirror.site:5000"));
  h.File("/etc/containerd/certs.d/quay.io/hosts.toml",
         "server = \"https://quay.io\"\n[host.\"https://admins.own\"]\n");
  run = h.Probe("containers.registry-mirrors", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("gpuctl's /etc/containerd/certs.d/ghcr.io/hosts.toml remains, but the "
                         "inventory no longer mirrors ghcr.io"),
            std::string::npos)
      << run.out;
}

TEST(RegistryMirrorsStepTest, NamesAConfigPathThatIsNotCertsD) {
  if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(MirrorInventory("{registry.k8s.io: \"http://mirror.site:5000\"}"));
  // containerd 1.6's own default: config_path = "".
  Node(h, "dump-gpuctl-1.6.20.toml");
  h.File("/etc/containerd/certs.d/registry.k8s.io/hosts.toml",
         HostsToml("https://registry.k8s.io", "http://mirror.site:5000"));
  auto run = h.Probe("containers.registry-mirrors", "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("containerd's CRI registry config_path is '' (want "
                         "/etc/containerd/certs.d)"),
            std::string::npos)
      << run.out;

  // Written, but containerd has not been restarted since.
  Node(h, "dump-registry-mirrors-1.6.20.toml", "1.17.8-1", 1700000001);
  run = h.Probe("containers.registry-mirrors", "r");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("changed after containerd started (restart pending)"), std::string::npos)
      << run.out;
}

TEST(RegistryMirrorsStepTest, AirGappedFallsBackToTheMirrorNotTheInternet) {
  if (const auto why = StepHarness::CanFakeFiles(); !why.empty()) GTEST_SKIP() << why;
  StepHarness h(
      "cluster: t\npolicy: {air_gapped: true}\norchestrator: none\n"
      "mirrors: {registries: {nvcr.io: \"http://mirror.site:5000\"}}\nnodes:\n"
      "  - {name: m, address: 198.18.0.9, os: ubuntu-22.04, roles: [master]}\n");
  Node(h, "dump-registry-mirrors-1.6.20.toml");
  // The upstream fallback a connected site gets is wrong here.
  h.File("/etc/containerd/certs.d/nvcr.io/hosts.toml",
         HostsToml("https://nvcr.io", "http://mirror.site:5000"));
  auto run = h.Probe("containers.registry-mirrors", "m");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.out.find("nvcr.io/hosts.toml differs"), std::string::npos) << run.out;
  h.File("/etc/containerd/certs.d/nvcr.io/hosts.toml",
         HostsToml("http://mirror.site:5000", "http://mirror.site:5000"));
  run = h.Probe("containers.registry-mirrors", "m");
  EXPECT_EQ(run.status, 0) << run.out;
}

}  // namespace
}  // namespace gpuctl
