# NVIDIA Fabric Manager, which programs the NVSwitches of an HGX/DGX board so
# CUDA can start there: nvidia-fabricmanager-<branch> on apt,
# nvidia-fabric-manager on dnf, one release per driver branch, from NVIDIA's
# CUDA repository. The daemon refuses a loaded driver of another version, as
# the real one does; while it runs the stand-in libcuda and nccl-tests work on
# a node whose profile says GPU_NVSWITCH=1 (docs/standins.md).
source "$PKG_DIR/../nvidia-driver/branches.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_RELEASES; }

if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=nvidia-fabricmanager-${PKG_VARIANT%%.*}
  PKG_RPM_NAME=nvidia-fabric-manager
  PKG_VERSION=$PKG_VARIANT-1
  PKG_SUMMARY="NVIDIA Fabric Manager (stand-in nv-fabricmanager), branch ${PKG_VARIANT%%.*}"
  PKG_DEB_DEPENDS="gpuctl-lab-common, python3"
  PKG_RPM_REQUIRES="gpuctl-lab-common"
  # One Fabric Manager at a time: another branch's replaces it, as with the
  # real packages.
  PKG_PROVIDES="nvidia-fabricmanager"
  PKG_CONFLICTS="nvidia-fabricmanager"
fi

# The version the daemon compares with the loaded driver's.
pkg_stage() {
  mkdir -p "$1/usr/lib/gpuctl-lab/nvidia"
  echo "${PKG_VERSION%-*}" >"$1/usr/lib/gpuctl-lab/nvidia/fabricmanager-version"
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
