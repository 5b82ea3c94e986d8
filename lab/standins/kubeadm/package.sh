# gpuctl lab package: kubeadm stand-in, one variant per Kubernetes minor so that
# apt pins like 'kubeadm=1.30.*' and dnf 'kubeadm-1.30.*' resolve as with pkgs.k8s.io.
# Sourced by lab/build-repo.sh (again with PKG_VARIANT set for each variant).
PKG_NAME=kubeadm
pkg_variants() { printf '%s\n' 1.28 1.29 1.30 1.31; }
case "${PKG_VARIANT:-1.30}" in
  1.28) PKG_VERSION=1.28.15-1.1 ;;
  1.29) PKG_VERSION=1.29.10-1.1 ;;
  1.30) PKG_VERSION=1.30.6-1.1 ;;
  1.31) PKG_VERSION=1.31.2-1.1 ;;
  *) echo "kubeadm: unknown variant $PKG_VARIANT" >&2; return 1 ;;
esac
PKG_SUMMARY="gpuctl lab stand-in: Command-line utility for administering a Kubernetes cluster"
PKG_DEB_DEPENDS="kube-standin-common (>= 1.0.0), kubernetes-cni (>= 1.2.0)"
PKG_RPM_REQUIRES="kube-standin-common >= 1.0.0, kubernetes-cni >= 1.2.0"
# The tool reads its Kubernetes version from this file (the package database
# is the fallback).
pkg_stage() {
  mkdir -p "$1/usr/lib/gpuctl-lab/kube/versions"
  echo "${PKG_VERSION%-*}" >"$1/usr/lib/gpuctl-lab/kube/versions/kubeadm"
}
