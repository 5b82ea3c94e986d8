# nvidia-smi and nvidia-persistenced, answering for the profile's GPUs. Ubuntu
# ships them in nvidia-utils-<branch>; RHEL in nvidia-driver-cuda.
source "$PKG_DIR/../nvidia-driver/branches.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_RELEASES; }

if [ -n "$PKG_VARIANT" ]; then
  b=${PKG_VARIANT%%.*}
  PKG_NAME=nvidia-utils-$b
  PKG_RPM_NAME=nvidia-driver-cuda
  PKG_VERSION=$(nvidia_deb_version "$PKG_VARIANT")
  PKG_VERSION_RPM=$(nvidia_rpm_version "$PKG_VARIANT")
  PKG_SUMMARY="NVIDIA driver support binaries (stand-in nvidia-smi), branch $b"
  PKG_DEB_DEPENDS="gpuctl-lab-common, python3"
  PKG_RPM_REQUIRES="gpuctl-lab-common"
  PKG_PROVIDES="nvidia-utils"
  PKG_CONFLICTS="nvidia-utils"
fi

# The NVML library's version: nvidia-smi compares it with the loaded module's.
pkg_stage() {
  mkdir -p "$1/usr/lib/gpuctl-lab/nvidia"
  echo "${PKG_VERSION%-*}" >"$1/usr/lib/gpuctl-lab/nvidia/nvml-version"
}
# Ubuntu's restricted component; on Rocky, NVIDIA's CUDA repository.
PKG_REPO_DEB=ubuntu/restricted
PKG_REPO_RPM=cuda
