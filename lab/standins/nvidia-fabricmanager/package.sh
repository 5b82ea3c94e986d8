# NVIDIA Fabric Manager, which programs the NVSwitches of an HGX/DGX board so
# CUDA can start there: nvidia-fabricmanager-<branch> on apt,
# nvidia-fabric-manager on dnf, one release per driver branch, from NVIDIA's
# CUDA repository. The daemon refuses a loaded driver of another version, as
# the real one does; while it runs the stand-in libcuda and nccl-tests work on
# a node whose profile says GPU_NVSWITCH=1 (docs/standins.md).
source "$PKG_DIR/../nvidia-driver/branches.sh"
# Every release but 560.35.03: the lab's CUDA repository is then a site
# mirror that took a driver without its Fabric Manager, which the preflight
# must refuse on NVSwitch boards before anything changes.
pkg_variants() {
  local r
  for r in $NVIDIA_RELEASES; do [ "$r" = 560.35.03 ] || echo "$r"; done
}

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
