# docker-ce: Docker Engine stand-in, same name on apt and dnf (Docker's own
# repositories). dockerd serves the Engine API's /_ping, /version and /info on
# /run/docker.sock from /etc/docker/daemon.json (runtimes, default-runtime,
# cgroup driver), so the real docker CLI and this package's CLI both show what
# `nvidia-ctk runtime configure --runtime=docker` wrote. It runs no containers.
PKG_NAME=docker-ce
PKG_VERSION=24.0.9-1
PKG_SUMMARY="Docker Engine 24.0.9 (gpuctl lab stand-in: API for info, no containers)"
# As Docker's own: containerd.io, never Ubuntu's containerd.
PKG_DEB_DEPENDS="python3, containerd.io"
PKG_RPM_REQUIRES="containerd.io"
# The real engine is split; one stand-in answers for the parts runbooks name.
PKG_PROVIDES="docker-ce-cli (= 24.0.9-1), docker-engine"
# Docker's own repositories.
PKG_REPO=docker
