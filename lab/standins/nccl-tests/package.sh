# nccl-tests: all_reduce_perf and friends, printing nccl-tests' report with
# bandwidth figures modelled on the node's GPUs (NVLink) and IB ports (IB_PORTS),
# so burn-in checks and ib-down faults show in the numbers. NVIDIA ships no
# package of it; sites build it, often under this name.
PKG_NAME=nccl-tests
PKG_VERSION=2.13.11-1
PKG_SUMMARY="NCCL tests (stand-in all_reduce_perf and friends)"
PKG_DEB_DEPENDS="gpuctl-lab-common, python3, libnccl2"
PKG_RPM_REQUIRES="gpuctl-lab-common, libnccl"
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
