#!/usr/bin/env bash
# Installs everything gpuctl needs to build, test and run its lab on Debian 12.
# Idempotent: packages already present are skipped by apt-get itself.
# Usage: scripts/install-deps.sh [build|lab|bench|all]   (default: all)
set -euo pipefail

what=${1:-all}
# clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes, which
# --no-install-recommends leaves out) build the fuzz targets (scripts/fuzz.sh).
build_pkgs=(
  build-essential cmake ninja-build pkg-config git
  libcli11-dev libyaml-cpp-dev libssh-dev libssl-dev libfmt-dev libspdlog-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev
  # tcmalloc_minimal: gpuctl's allocator (cmake/GpuctlDependencies.cmake).
  libgoogle-perftools-dev
  clang-format clang-tidy clang libclang-rt-14-dev
  # lld links every target (cmake/GpuctlOptions.cmake, GPUCTL_LINKER): the
  # sanitizer builds' test binaries several times faster than GNU ld.
  lld
  openssh-server openssh-client
  # scripts/lint-steps.sh lints the step scripts and the repository's shell.
  shellcheck
  # cpack -G RPM runs rpmbuild (cpack -G DEB's dpkg-shlibdeps comes with
  # build-essential's dpkg-dev).
  rpm
  # The completion tests load the generated zsh and fish scripts in the real
  # shells (bash is always there).
  zsh fish
  # The live board's test (tests/unit/cli_ssh_board_test.cpp) runs apply in a
  # tmux pane and reads the screen as a person would see it.
  tmux
)
# dpkg-dev, rpm (rpmbuild), createrepo-c and gcc build the lab's package
# repository (lab/build-repo.sh; gcc makes the stand-ins' stub libraries).
# sudo and openssl: the nodes' login users (up --sudo-users) become root with
# the host's real sudo; openssl hashes their password.
# gpg, gpg-agent, nginx: the lab's signed repositories, served over HTTP;
# curl: the repos.* steps fetch keys on the nodes (which use the host's tools).
# python3-yaml: the Kubernetes stand-ins parse and print YAML with PyYAML.
# nftables: the fault lab tests cut and thin a node's link with nft rules in
# its network namespace (the kernel has no sch_netem).
lab_pkgs=(
  iproute2 util-linux procps psmisc systemd dbus openssh-server openssh-client
  dpkg-dev rpm createrepo-c dnf python3 python3-yaml gcc sudo openssl gpg gpg-agent curl nginx
  nftables
)
bench_pkgs=(ansible pdsh hyperfine)

pkgs=()
case "$what" in
  build) pkgs=("${build_pkgs[@]}") ;;
  lab) pkgs=("${lab_pkgs[@]}") ;;
  bench) pkgs=("${bench_pkgs[@]}") ;;
  all) pkgs=("${build_pkgs[@]}" "${lab_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "usage: $0 [build|lab|bench|all]" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get)" >&2
  exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Package lists may be absent on a fresh machine; refresh them once.
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
