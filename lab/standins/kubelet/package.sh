# gpuctl lab package: kubelet stand-in, one variant per Kubernetes minor
# (kube-standin-common/versions.sh).
# Sourced by lab/build-repo.sh (again with PKG_VARIANT set for each variant).
PKG_NAME=kubelet
source "$PKG_DIR/../kube-standin-common/versions.sh"
PKG_SUMMARY="gpuctl lab stand-in: Node agent for Kubernetes clusters"
PKG_DEB_DEPENDS="kube-standin-common (>= 1.0.0), kubernetes-cni (>= 1.2.0)"
PKG_RPM_REQUIRES="kube-standin-common >= 1.0.0, kubernetes-cni >= 1.2.0"
