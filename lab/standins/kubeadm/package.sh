# gpuctl lab package: kubeadm stand-in, one variant per Kubernetes minor
# (kube-standin-common/versions.sh).
# Sourced by lab/build-repo.sh (again with PKG_VARIANT set for each variant).
PKG_NAME=kubeadm
source "$PKG_DIR/../kube-standin-common/versions.sh"
PKG_SUMMARY="gpuctl lab stand-in: Command-line utility for administering a Kubernetes cluster"
PKG_DEB_DEPENDS="kube-standin-common (>= 1.0.0), kubernetes-cni (>= 1.2.0)"
PKG_RPM_REQUIRES="kube-standin-common >= 1.0.0, kubernetes-cni >= 1.2.0"
