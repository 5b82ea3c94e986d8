# libnvidia-compute-<branch> (RHEL: nvidia-driver-cuda-libs): the CUDA driver
# library, libcuda.so.1. A real (tiny) ELF library: cuInit, cuDeviceGetCount,
# cuDriverGetVersion, cuGetErrorName and cuGetErrorString, answering what the
# node's simulated driver would (cuda-state): no device before the module
# loads, 803 on a library/module mismatch, 802 "system not yet initialized" on
# an NVSwitch board until a Fabric Manager of the driver's version runs.
source "$PKG_DIR/../nvidia-driver/branches.sh"
source "$PKG_DIR/../stub-lib.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_RELEASES; }

if [ -n "$PKG_VARIANT" ]; then
  b=${PKG_VARIANT%%.*}
  PKG_NAME=libnvidia-compute-$b
  PKG_RPM_NAME=nvidia-driver-cuda-libs
  PKG_VERSION=$(nvidia_deb_version "$PKG_VARIANT")
  PKG_VERSION_RPM=$(nvidia_rpm_version "$PKG_VARIANT")
  PKG_SUMMARY="NVIDIA libcompute package (stand-in libcuda.so.1), branch $b"
  PKG_DEB_DEPENDS="gpuctl-lab-common, python3"
  PKG_RPM_REQUIRES="gpuctl-lab-common"
  PKG_PROVIDES="libnvidia-compute"
  PKG_CONFLICTS="libnvidia-compute"
  PKG_ARCH=amd64 # a real (stub) ELF library inside
fi

pkg_stage() {
  local lib=$1/usr/lib/x86_64-linux-gnu v=${PKG_VERSION%-*}
  stub_lib "$lib/libcuda.so.$v" libcuda.so.1 \
    "$(sed "s/@CUDA_VERSION@/$(cuda_of_branch "${v%%.*}")/" "$PKG_DIR/libcuda.c")"
  ln -s "libcuda.so.$v" "$lib/libcuda.so.1"
}

# The CUDA version each branch's driver supports, as cuDriverGetVersion
# answers it (12040 for 12.4).
cuda_of_branch() {
  case "$1" in
    535) echo 12020 ;; 550) echo 12040 ;; 560) echo 12060 ;; 570) echo 12080 ;; *) echo 13000 ;;
  esac
}
# Ubuntu's restricted component; on Rocky, NVIDIA's CUDA repository.
PKG_REPO_DEB=ubuntu/restricted
PKG_REPO_RPM=cuda
