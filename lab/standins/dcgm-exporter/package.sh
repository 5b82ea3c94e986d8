# dcgm-exporter: Prometheus metrics per GPU on :9400 (real names and labels),
# through a systemd unit running a small python3 HTTP server. NVIDIA ships it as
# a container; sites that run it on the host package it under this name.
PKG_NAME=dcgm-exporter
PKG_VERSION=3.6.1-1
PKG_SUMMARY="NVIDIA DCGM exporter for Prometheus (stand-in)"
PKG_DEB_DEPENDS="gpuctl-lab-common, python3, datacenter-gpu-manager"
PKG_RPM_REQUIRES="gpuctl-lab-common, datacenter-gpu-manager"
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
