// The inventory's `mirrors:` block and policy.air_gapped (src/model/inventory_mirrors.cpp):
// every value reaches a script, a command line on the master or a file
// containerd reads, so hostile values are refused at their file:line:column,
// and an air-gapped inventory names what would still come from the internet.
#include <gtest/gtest.h>

#include "gpuctl/model/params.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::kMinimalInventory;
using testing::ParseText;

// kMinimalInventory is 10 lines; a block appended starts on line 11.
std::string With(const std::string& block) { return std::string(kMinimalInventory) + block; }

TEST(InventoryMirrors, ReadsUrlsPathsAndRegistriesWithStarForTheRest) {
  const auto p =
      ParseText(With("mirrors:\n"
                     "  cni_manifest: /srv/mirror/kube-flannel.yml\n"
                     "  gpu_operator_chart: https://mirror.site:8443/charts/\n"
                     "  registries:\n"
                     "    \"*\": http://mirror.site:5000\n"
                     "    nvcr.io: https://10.0.0.5/nvcr\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Mirrors& m = p.inventory->mirrors;
  EXPECT_EQ(m.cni_manifest, "/srv/mirror/kube-flannel.yml");
  EXPECT_EQ(m.gpu_operator_chart, "https://mirror.site:8443/charts/");
  ASSERT_EQ(m.registries.size(), 5U);
  EXPECT_EQ(m.registries.at("nvcr.io"), "https://10.0.0.5/nvcr");
  for (const char* r : {"registry.k8s.io", "docker.io", "quay.io", "ghcr.io"}) {
    EXPECT_EQ(m.registries.at(r), "http://mirror.site:5000") << r;
  }
  const auto values = ParameterValues(*p.inventory, p.inventory->nodes[0]);
  EXPECT_EQ(values.at("cni_manifest"), "/srv/mirror/kube-flannel.yml");
  EXPECT_EQ(values.at("registry_mirrors"),
            "docker.io http://mirror.site:5000 https://registry-1.docker.io\n"
            "ghcr.io http://mirror.site:5000 https://ghcr.io\n"
            "nvcr.io https://10.0.0.5/nvcr https://nvcr.io\n"
            "quay.io http://mirror.site:5000 https://quay.io\n"
            "registry.k8s.io http://mirror.site:5000 https://registry.k8s.io");
}

TEST(InventoryMirrors, WithoutMirrorsTheUpstreamSourcesAreParameters) {
  const auto p = ParseText(kMinimalInventory);
  ASSERT_TRUE(p.inventory);
  const auto values = ParameterValues(*p.inventory, p.inventory->nodes[0]);
  EXPECT_EQ(values.at("cni_manifest"),
            "https://github.com/flannel-io/flannel/releases/download/v0.26.1/kube-flannel.yml");
  EXPECT_EQ(values.at("gpu_operator_chart"), "https://helm.ngc.nvidia.com/nvidia");
  EXPECT_EQ(values.at("registry_mirrors"), "");
}

TEST(InventoryMirrors, CalicoComesFromItsReleaseManifestOrTheSitesCopy) {
  auto p = ParseText(With("versions: {cni: calico}\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_EQ(ParameterValues(*p.inventory, p.inventory->nodes[0]).at("cni_manifest"),
            "https://raw.githubusercontent.com/projectcalico/calico/v3.28.1/manifests/calico.yaml");
  p = ParseText(
      With("versions: {cni: calico}\nmirrors: {cni_manifest: /srv/mirror/calico.yaml}\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  EXPECT_EQ(ParameterValues(*p.inventory, p.inventory->nodes[0]).at("cni_manifest"),
            "/srv/mirror/calico.yaml");
}

TEST(InventoryMirrors, ChartArchivesByUrlOrPath) {
  auto p = ParseText(With("mirrors: {gpu_operator_chart: /srv/gpu-operator-v24.3.0.tgz}\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  p = ParseText(
      With("mirrors: {gpu_operator_chart: http://m.site/charts/gpu-operator-v24.3.0.tgz}\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  // A path is a chart archive; a directory or a values file is not a chart.
  p = ParseText(With("mirrors: {gpu_operator_chart: /srv/charts/gpu-operator}\n"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 11, 31, "a path on the master must be a chart archive"));
}

// Each hostile value is refused at its own position, and the message names
// the offending character without echoing the value.
TEST(InventoryMirrors, HostileValuesAreRefusedWhereTheyAre) {
  const auto p =
      ParseText(With("mirrors:\n"
                     "  cni_manifest: \"http://m.site/kube-flannel.yml\\nrm -rf /\"\n"  // 12
                     "  gpu_operator_chart: \"http://m.site/$(reboot)\"\n"              // 13
                     "  registries:\n"
                     "    nvcr.io: \"http://m.site/`id`\"\n"          // 15
                     "    docker.io: \"http://m.site;reboot\"\n"      // 16
                     "    quay.io: \"http://m.site/a'b\"\n"           // 17
                     "    ghcr.io: \"http://m.site/a\\\"b\"\n"        // 18
                     "    registry.k8s.io: \"http://m.site/../x\"\n"  // 19
                     ));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 12, 17, "may not contain a line break"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 13, 23, "may not contain '$'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 15, 14, "registry nvcr.io: a URL may not contain '`'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 16, 16, "may not contain ';'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 17, 14, "may not contain '''"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 18, 14, "may not contain '\"'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 19, 22, "may not contain '..'"));
  EXPECT_EQ(p.diagnostics.Format().find("reboot"), std::string::npos) << p.diagnostics.Format();
}

TEST(InventoryMirrors, PathsAndHostsByKind) {
  const auto p =
      ParseText(With("mirrors:\n"
                     "  cni_manifest: srv/kube-flannel.yml\n"          // 12: relative
                     "  gpu_operator_chart: /srv/../etc/shadow.tgz\n"  // 13
                     "  registries:\n"
                     "    nvcr.io: ftp://m.site\n"         // 15
                     "    docker.io: http://:5000/x\n"     // 16
                     "    quay.io: http://m.site:99999\n"  // 17
                     "    ghcr.io: https://user@m.site\n"  // 18
                     "    nvcr.i: http://m.site\n"));      // 19
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 12, 17, "an http(s) URL or an absolute path"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 13, 23, "a path may not contain '..'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 15, 14, "expected an http:// or https:// URL"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 16, 16, "the URL has no host"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 17, 14, "invalid port '99999'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 18, 14, "may not carry credentials"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 19, 5, "did you mean 'nvcr.io'"));
}

TEST(InventoryAirGapped, NamesEachArtefactWithoutAMirror) {
  // w1 gets GPUs: the operator's chart and nvcr.io are needed too.
  std::string text = kMinimalInventory;
  text += "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}}\n";
  text += "policy:\n  air_gapped: true\n";  // line 13
  const auto p = ParseText(text);
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 13, 15, "the CNI manifest would come from GitHub"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 13, 15, "the GPU Operator chart would come from"));
  for (const char* r : {"registry.k8s.io", "docker.io", "nvcr.io"}) {
    EXPECT_TRUE(HasDiagnostic(p.diagnostics, 13, 15, std::string("come from ") + r)) << r;
  }
  EXPECT_EQ(p.diagnostics.Format().find("quay.io"), std::string::npos);
}

TEST(InventoryAirGapped, MirroredClusterValidates) {
  std::string text = kMinimalInventory;
  text += "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}}\n";
  text +=
      "policy: {air_gapped: true}\n"
      "mirrors:\n"
      "  cni_manifest: http://m.site/kube-flannel.yml\n"
      "  gpu_operator_chart: /srv/gpu-operator-v24.3.0.tgz\n"
      "  registries: {\"*\": http://m.site:5000}\n"
      "repositories:\n"  // the packages too (repositories_test.cpp)
      "  cuda: {url: http://m.site/cuda}\n"
      "  container-toolkit: {url: http://m.site/ct}\n"
      "  kubernetes: {url: http://m.site/k8s}\n"
      "  helm: {url: http://m.site/helm}\n";
  const auto p = ParseText(text);
  EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
}

TEST(InventoryAirGapped, CpuOnlyKubernetesNeedsNoChartOrNvcr) {
  const auto p =
      ParseText(With("policy: {air_gapped: true}\n"
                     "mirrors:\n"
                     "  cni_manifest: /srv/kube-flannel.yml\n"
                     "  registries: {registry.k8s.io: http://m.site, docker.io: "
                     "http://m.site}\n"
                     "repositories:\n"
                     "  kubernetes: {url: http://m.site/k8s}\n"
                     "  helm: {url: http://m.site/helm}\n"));
  EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
}

TEST(InventoryAirGapped, SlurmWithDockerNeedsDockerHub) {
  auto p = ParseText(With("orchestrator: slurm\npolicy: {air_gapped: true, docker: true}\n"));
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 12, 22, "Docker pulls images from docker.io"));
  p = ParseText(With("orchestrator: slurm\npolicy: {air_gapped: true}\n"));
  EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
}

}  // namespace
}  // namespace gpuctl
