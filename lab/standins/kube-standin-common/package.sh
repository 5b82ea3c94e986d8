# gpuctl lab package: code shared by the Kubernetes stand-ins (kubeadm,
# kubelet, kubectl, helm) and the stand-in API server. Sourced by
# lab/build-repo.sh. See docs/standins-kubernetes.md.
PKG_NAME=kube-standin-common
PKG_VERSION=1.0.0-1
PKG_SUMMARY="gpuctl lab: shared code of the Kubernetes stand-ins (API server, kubeadm, kubelet, kubectl, helm)"
# python3 comes from the host root every lab node overlays; the Debian
# package database knows it, the RPM one does not, so only .deb declares it.
PKG_DEB_DEPENDS="python3"
# Lab plumbing of the Kubernetes and helm stand-ins: in the distribution's archive.
PKG_REPO_DEB=ubuntu/main
PKG_REPO_RPM=rocky/AppStream
