# datacenter-gpu-manager (DCGM 3): dcgmi discovery -l for the profile's GPUs.
# No nv-hostengine: the stand-in answers without one.
PKG_NAME=datacenter-gpu-manager
PKG_VERSION=3.3.9-1
PKG_SUMMARY="NVIDIA Data Center GPU Manager (stand-in dcgmi)"
PKG_DEB_DEPENDS="gpuctl-lab-common, python3"
PKG_RPM_REQUIRES="gpuctl-lab-common"
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
