# gpuctl lab package: kubernetes-cni stand-in (CNI plugin binaries in
# /opt/cni/bin as small scripts; the lab never runs pods). One variant per
# Kubernetes minor, with the versions pkgs.k8s.io ships for that minor.
# Sourced by lab/build-repo.sh.
PKG_NAME=kubernetes-cni
pkg_variants() { printf '%s\n' 1.28 1.29 1.30 1.31; }
case "${PKG_VARIANT:-1.30}" in
  1.28) PKG_VERSION=1.2.0-2.1 ;;
  1.29) PKG_VERSION=1.3.0-1.1 ;;
  1.30) PKG_VERSION=1.4.0-1.1 ;;
  1.31) PKG_VERSION=1.5.1-1.1 ;;
  *) echo "kubernetes-cni: unknown variant $PKG_VARIANT" >&2; return 1 ;;
esac
PKG_SUMMARY="gpuctl lab stand-in: Binaries required to provision kubernetes container networking"
# pkgs.k8s.io: one repository per Kubernetes minor.
PKG_REPO=kubernetes/v${PKG_VARIANT:-1.30}
