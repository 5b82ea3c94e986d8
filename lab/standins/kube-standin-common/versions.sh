# Kubernetes releases the kubeadm, kubelet and kubectl stand-ins are built at:
# one variant per minor, versioned as pkgs.k8s.io does, so apt pins like
# 'kubeadm=1.30.*' and dnf 'kubeadm-1.30.*' resolve. One table for all three,
# because kubeadm's preflight refuses a kubelet of another version.
# Sourced by their package.sh with PKG_NAME and PKG_VARIANT set.
pkg_variants() { printf '%s\n' 1.28 1.29 1.30 1.31; }
case "${PKG_VARIANT:-1.30}" in
  1.28) PKG_VERSION=1.28.15-1.1 ;;
  1.29) PKG_VERSION=1.29.10-1.1 ;;
  1.30) PKG_VERSION=1.30.6-1.1 ;;
  1.31) PKG_VERSION=1.31.2-1.1 ;;
  *) echo "$PKG_NAME: unknown variant $PKG_VARIANT" >&2; return 1 ;;
esac
# The tool reads its Kubernetes version from this file (the package database
# is the fallback).
pkg_stage() {
  mkdir -p "$1/usr/lib/gpuctl-lab/kube/versions"
  echo "${PKG_VERSION%-*}" >"$1/usr/lib/gpuctl-lab/kube/versions/$PKG_NAME"
}
# pkgs.k8s.io: one repository per Kubernetes minor.
PKG_REPO=kubernetes/v${PKG_VARIANT:-1.30}
