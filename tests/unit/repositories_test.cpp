// Package repositories (src/model/repositories.cpp, src/model/inventory_repositories.cpp):
// the vendors' layouts resolved per node, a mirror replacing only the base,
// pinned keys, values checked by kind at file:line:column, policy.air_gapped,
// and the rule "which node needs which repository" held together with the
// steps repos.* (playbooks/12-repos.yaml) and the package steps' depends.
#include <algorithm>

#include <gtest/gtest.h>

#include "gpuctl/model/catalog.h"
#include "gpuctl/model/params.h"
#include "gpuctl/model/plan.h"
#include "gpuctl/model/repositories.h"
#include "inventory_test_util.h"

namespace gpuctl {
namespace {

using testing::HasDiagnostic;
using testing::kMinimalInventory;
using testing::ParseText;

constexpr const char* kGpus =
    "    hardware: {gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}}\n";

// m1 (ubuntu-22.04 master), w1 (ubuntu-22.04 GPU worker), r1 (rocky-9 GPU
// worker with IB), then `extra` from line 19.
std::string Cluster(const std::string& extra = "") {
  return std::string(kMinimalInventory) + kGpus +
         "  - name: r1\n    address: 198.18.0.12\n    os: rocky-9\n    roles: [worker]\n"
         "    hardware:\n      gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}\n"
         "      ib: [{device: mlx5_0}]\n" +
         extra;
}

ResolvedRepository Resolve(const Inventory& inv, const std::string& name, const std::string& node) {
  auto r = ResolveRepository(name, inv, *inv.Find(node));
  if (!r) throw std::runtime_error("no " + name + " for " + node);
  return *r;
}

TEST(Repositories, UpstreamLayoutsPerRelease) {
  const auto p = ParseText(Cluster());
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  auto r = Resolve(inv, "cuda", "w1");
  EXPECT_EQ(r.uri, "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/");
  EXPECT_EQ(r.suites, "/");
  EXPECT_EQ(r.components, "");
  EXPECT_EQ(
      r.key,
      "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub");
  EXPECT_EQ(r.fingerprint, "EB693B3035CD5710E231E123A4B469963BF863CC");
  r = Resolve(inv, "cuda", "r1");
  EXPECT_EQ(r.baseurl, "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/");
  EXPECT_EQ(r.key,
            "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/D42D0685.pub");
  EXPECT_EQ(r.fingerprint, "610C7B14E068A878070DA4E99CD0A493D42D0685");
  EXPECT_TRUE(r.repo_gpgcheck);

  r = Resolve(inv, "kubernetes", "w1");
  EXPECT_EQ(r.uri, "https://pkgs.k8s.io/core:/stable:/v1.30/deb/");
  EXPECT_EQ(r.key, "https://pkgs.k8s.io/core:/stable:/v1.30/deb/Release.key");
  r = Resolve(inv, "kubernetes", "r1");
  EXPECT_EQ(r.key, "https://pkgs.k8s.io/core:/stable:/v1.30/rpm/repodata/repomd.xml.key");

  r = Resolve(inv, "docker", "w1");
  EXPECT_EQ(r.uri, "https://download.docker.com/linux/ubuntu");
  EXPECT_EQ(r.suites, "jammy");
  EXPECT_EQ(r.components, "stable");
  EXPECT_EQ(r.fingerprint, "9DC858229FC7DD38854AE2D88D81803C0EBFCD88");
  r = Resolve(inv, "docker", "r1");
  EXPECT_EQ(r.baseurl, "https://download.docker.com/linux/centos/9/x86_64/stable/");
  EXPECT_EQ(r.key, "https://download.docker.com/linux/centos/gpg");
  EXPECT_EQ(r.fingerprint, "060A61C51B558A7F742B77AAC52FEB6B621E9F35");
  EXPECT_FALSE(r.repo_gpgcheck);  // Docker signs its packages, not its metadata

  r = Resolve(inv, "ofed", "r1");
  EXPECT_EQ(r.baseurl,
            "https://linux.mellanox.com/public/repo/mlnx_ofed/latest-24.01/"
            "rhel@VERSION_ID@/x86_64/");
  EXPECT_EQ(r.fingerprint, "");  // the inventory must pin it
  r = Resolve(inv, "ofed", "w1");
  EXPECT_EQ(r.uri,
            "https://linux.mellanox.com/public/repo/mlnx_ofed/latest-24.01/ubuntu22.04/amd64/");

  r = Resolve(inv, "epel", "r1");
  EXPECT_EQ(r.baseurl, "https://dl.fedoraproject.org/pub/epel/9/Everything/x86_64/");
  EXPECT_EQ(r.key, "https://dl.fedoraproject.org/pub/epel/RPM-GPG-KEY-EPEL-9");
  EXPECT_EQ(r.fingerprint, "FF8AD1344597106ECE813B918A3872BF3228467C");
  EXPECT_FALSE(ResolveRepository("epel", inv, *inv.Find("w1")));

  r = Resolve(inv, "helm", "m1");
  EXPECT_EQ(r.uri, "https://packages.buildkite.com/helm-linux/helm-debian/any/");
  EXPECT_EQ(r.suites, "any");
  EXPECT_EQ(r.components, "main");
  EXPECT_EQ(r.fingerprint, "DDF78C3E6EBB2D2CC223C95C62BA89D07698DBC6");
  EXPECT_FALSE(ResolveRepository("helm", inv, *inv.Find("r1")));
}

TEST(Repositories, EpelKeyFollowsTheMajorRelease) {
  auto text = std::string(kMinimalInventory);
  text.replace(text.rfind("ubuntu-22.04"), 12, "rocky-8");
  const auto p = ParseText(text);
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const auto r = Resolve(*p.inventory, "epel", "w1");
  EXPECT_EQ(r.baseurl, "https://dl.fedoraproject.org/pub/epel/8/Everything/x86_64/");
  EXPECT_EQ(r.fingerprint, "94E279EB8D8F25B21810ADF121EA45AB2F86D6A1");
}

TEST(Repositories, AMirrorReplacesOnlyTheBase) {
  const auto p = ParseText(Cluster(
      "versions: {kubernetes: \"1.31.2\", ofed: \"23.10-2.1.3.1\"}\n"
      "repositories:\n"
      "  cuda: {url: \"http://m.site:8642/cuda/\"}\n"
      "  ofed: {url: http://m.site/ofed, fingerprint: \"eb69 3b30 35cd 5710 e231  e123 a4b4 "
      "6996 3bf8 63cc\"}\n"
      "  kubernetes: {url: http://m.site/k8s, key: /etc/gpuctl/k8s.asc}\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Inventory& inv = *p.inventory;
  auto r = Resolve(inv, "cuda", "w1");
  EXPECT_EQ(r.uri, "http://m.site:8642/cuda/ubuntu2204/x86_64/");
  EXPECT_EQ(r.key, "http://m.site:8642/cuda/ubuntu2204/x86_64/3bf863cc.pub");
  EXPECT_EQ(r.fingerprint, "EB693B3035CD5710E231E123A4B469963BF863CC");
  EXPECT_TRUE(r.mirrored);
  // Upstream keeps the key outside the repository: the mirror has it at its base.
  r = Resolve(inv, "ofed", "r1");
  EXPECT_EQ(r.baseurl, "http://m.site/ofed/latest-23.10/rhel@VERSION_ID@/x86_64/");
  EXPECT_EQ(r.key, "http://m.site/ofed/RPM-GPG-KEY-Mellanox");
  EXPECT_EQ(r.fingerprint, "EB693B3035CD5710E231E123A4B469963BF863CC");
  r = Resolve(inv, "kubernetes", "w1");
  EXPECT_EQ(r.uri, "http://m.site/k8s/v1.31/deb/");
  EXPECT_EQ(r.key, "/etc/gpuctl/k8s.asc");
  EXPECT_EQ(r.Describe(),
            "name=kubernetes\ntype=deb\nuri=http://m.site/k8s/v1.31/deb/\nsuites=/\ncomponents=\n"
            "key=/etc/gpuctl/k8s.asc\nfingerprint=DE15B14486CD377B9E876E1A234654DA9A296436");
}

TEST(Repositories, ValuesAreCheckedByKind) {
  const auto p =
      ParseText(Cluster("repositories:\n"                                      // 19
                        "  cuda: {url: ftp://m.site/cuda}\n"                   // 20
                        "  docker: {url: \"http://m.site/$(reboot)\"}\n"       // 21
                        "  epel: {url: \"http://m.site/a b\"}\n"               // 22
                        "  helm: {key: keys/helm.asc}\n"                       // 23
                        "  kubernetes: {fingerprint: DE15B14486CD377B9E87}\n"  // 24
                        "  kubernets: {url: http://m.site/k8s}\n"              // 25
                        "  ofed: {key: \"http://m.site/`id`\"}\n"));           // 26
  EXPECT_FALSE(p.inventory);
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 20, 15, "expected an http:// or https:// URL"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 21, 17, "may not contain '$'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 22, 15, "may not contain whitespace"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 23, 15, "an absolute path on the node"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 24, 29, "40 hex digits"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 25, 3, "did you mean 'kubernetes'"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 26, 15, "may not contain '`'"));
}

TEST(Repositories, AirGappedNamesEachRepositoryANodeNeeds) {
  const std::string mirrors =
      "mirrors:\n  cni_manifest: /srv/kube-flannel.yml\n  gpu_operator_chart: /srv/op.tgz\n"
      "  registries: {\"*\": http://m.site:5000}\n";
  auto p = ParseText(Cluster("policy: {air_gapped: true}\n" + mirrors +
                             "repositories:\n  cuda: {url: http://m.site/cuda}\n"));
  EXPECT_FALSE(p.inventory);
  // Line 19 is policy; its air_gapped value is at column 22.
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 19, 22,
                            "package repository 'kubernetes' would come from "
                            "https://pkgs.k8s.io/core:/stable: (for m1, w1, r1)"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 19, 22, "repository 'docker' would come from"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 19, 22, "'ofed' would come from"));
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 19, 22, "'helm' would come from"));
  EXPECT_EQ(p.diagnostics.Format().find("'cuda'"), std::string::npos);
  // EPEL serves Slurm, the dnf master's helm and a dnf GPU node's dkms (the
  // NVIDIA driver's DKMS package requires it): r1 is a Rocky GPU worker.
  EXPECT_TRUE(HasDiagnostic(p.diagnostics, 19, 22, "'epel' would come from"));
  EXPECT_NE(p.diagnostics.Format().find("(for r1)"), std::string::npos) << p.diagnostics.Format();

  std::string all = "repositories:\n";
  for (const auto& name : RepositoryNames()) {
    all += "  " + name + ": {url: http://m.site/" + name + "}\n";
  }
  p = ParseText(Cluster("policy: {air_gapped: true}\n" + mirrors + all));
  EXPECT_TRUE(p.inventory) << p.diagnostics.Format();
}

TEST(Repositories, EachRepositoryIsItsOwnParameter) {
  const auto a = ParseText(Cluster());
  const auto b = ParseText(Cluster("repositories: {cuda: {url: http://m.site/cuda}}\n"));
  ASSERT_TRUE(a.inventory && b.inventory);
  const auto before = ParameterValues(*a.inventory, a.inventory->nodes[1]);
  const auto after = ParameterValues(*b.inventory, b.inventory->nodes[1]);
  EXPECT_NE(before.at("repo_cuda"), after.at("repo_cuda"));
  for (const char* other : {"repo_container_toolkit", "repo_kubernetes", "repo_docker", "repo_ofed",
                            "repo_helm", "repo_epel"}) {
    EXPECT_EQ(before.at(other), after.at(other)) << other;
  }
  EXPECT_EQ(before.at("repo_epel"), "");  // an apt node has no EPEL
}

// The steps repos.* apply exactly where NeedsRepository says (the rule
// policy.air_gapped checks), across orchestrators, families and policies.
TEST(Repositories, StepsApplyWhereTheNodesNeedThem) {
  Diagnostics diagnostics;
  const auto catalog = Catalog::Load(GPUCTL_PLAYBOOK_DIR, diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  const std::string storage =
      "  - {name: s1, address: 198.18.0.20, os: rocky-9, roles: [storage]}\n";
  for (const std::string& extra :
       {std::string(""), std::string("orchestrator: slurm\n"),
        std::string("policy: {docker: true}\n"), std::string("orchestrator: none\n")}) {
    const auto p = ParseText(Cluster(storage + extra));
    ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
    for (const Node& node : p.inventory->nodes) {
      for (const std::string& name : RepositoryNames()) {
        const Step* step = catalog->Find("repos." + name);
        ASSERT_NE(step, nullptr) << name;
        EXPECT_EQ(step->AppliesTo(node, *p.inventory), NeedsRepository(name, *p.inventory, node))
            << name << " on " << node.name << " with '" << extra << "'";
      }
    }
  }
}

// A package step depends on its repository step; where that step does not
// apply (another family, a false condition), the dependency is satisfied, not
// an error: the plan simply has no such item to wait for.
TEST(Repositories, PackageStepsWaitForTheirRepositoryWhereItApplies) {
  Diagnostics diagnostics;
  const auto catalog = Catalog::Load(GPUCTL_PLAYBOOK_DIR, diagnostics);
  ASSERT_TRUE(catalog) << diagnostics.Format();
  const auto p = ParseText(Cluster("orchestrator: slurm\n"));
  ASSERT_TRUE(p.inventory) << p.diagnostics.Format();
  const Plan plan = Plan::Build(*p.inventory, *catalog);
  const PlanItem* rocky_munge = plan.Find("r1", "slurm.munge");
  const PlanItem* rocky_epel = plan.Find("r1", "repos.epel");
  ASSERT_TRUE(rocky_munge && rocky_epel);
  EXPECT_NE(std::find(rocky_munge->after.begin(), rocky_munge->after.end(), rocky_epel->id),
            rocky_munge->after.end());
  // Ubuntu's munge comes from universe: no EPEL item, and munge is planned.
  EXPECT_EQ(plan.Find("w1", "repos.epel"), nullptr);
  ASSERT_NE(plan.Find("w1", "slurm.munge"), nullptr);
  // containerd: Ubuntu's on apt (no Docker repository without policy.docker),
  // Docker's containerd.io on dnf.
  EXPECT_EQ(plan.Find("w1", "repos.docker"), nullptr);
  const PlanItem* containerd = plan.Find("r1", "containers.containerd");
  const PlanItem* docker = plan.Find("r1", "repos.docker");
  ASSERT_TRUE(containerd && docker);
  EXPECT_NE(std::find(containerd->after.begin(), containerd->after.end(), docker->id),
            containerd->after.end());

  // --only cuda brings the CUDA repository along.
  std::string error;
  const Catalog only = catalog->Select({"cuda"}, error);
  EXPECT_NE(only.Find("repos.cuda"), nullptr) << error;
  EXPECT_NE(catalog->Select({"ib.ofed"}, error).Find("repos.ofed"), nullptr) << error;
}

TEST(Repositories, FingerprintsAreNormalized) {
  EXPECT_EQ(NormalizeFingerprint("9dc8 5822 9fc7 dd38 854a  e2d8 8d81 803c 0ebf cd88"),
            "9DC858229FC7DD38854AE2D88D81803C0EBFCD88");
  EXPECT_FALSE(NormalizeFingerprint("0EBFCD88"));
  EXPECT_FALSE(NormalizeFingerprint("9DC858229FC7DD38854AE2D88D81803C0EBFCD8G"));
}

}  // namespace
}  // namespace gpuctl
