# gpuctl lab package: helm stand-in (releases are kept by the lab's stand-in
# API server; repositories are only recorded). Sourced by lab/build-repo.sh.
PKG_NAME=helm
PKG_VERSION=3.16.2-1
PKG_SUMMARY="gpuctl lab stand-in: The Kubernetes Package Manager"
PKG_DEB_DEPENDS="kube-standin-common (>= 1.0.0)"
PKG_RPM_REQUIRES="kube-standin-common >= 1.0.0"
# Helm's apt repository; on Rocky, EPEL's helm.
PKG_REPO_DEB=helm
PKG_REPO_RPM=epel
