# gpuctl lab package: code shared by the Kubernetes stand-ins (kubeadm,
# kubelet, kubectl, helm) and the stand-in API server. Sourced by
# lab/build-repo.sh. See docs/standins-kubernetes.md.
PKG_NAME=kube-standin-common
PKG_VERSION=1.0.0-1
PKG_SUMMARY="gpuctl lab: shared code of the Kubernetes stand-ins (API server, kubeadm, kubelet, kubectl, helm)"
# python3 and PyYAML come from the host root every lab node overlays
# (/usr/bin/python3 finds /usr/lib/python3/dist-packages/yaml there). The
# Debian package database knows both, so the .deb declares them; on Rocky
# gpuctl-lab-rocky-base stands for the base system and names python3 but not
# python3-pyyaml, so the .rpm requires nothing it could not resolve.
PKG_DEB_DEPENDS="python3, python3-yaml"
# Lab plumbing of the Kubernetes and helm stand-ins: in the distribution's archive.
PKG_REPO_DEB=ubuntu/main
PKG_REPO_RPM=rocky/AppStream
