# cuda-drivers: NVIDIA's repository metapackage, one version per driver branch
# (the newest wins unless pinned: `dnf install cuda-drivers-550.127.05`,
# `apt-get install cuda-drivers=550.127.05-1`).
source "$PKG_DIR/../nvidia-driver/branches.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_BRANCHES; }

if [ -n "$PKG_VARIANT" ]; then
  v=$(nvidia_release "$PKG_VARIANT")
  PKG_NAME=cuda-drivers
  PKG_VERSION=$v-1
  PKG_SUMMARY="CUDA driver metapackage ($v)"
  PKG_DEB_DEPENDS="nvidia-driver-$PKG_VARIANT (= $v-1)"
  PKG_RPM_REQUIRES="nvidia-driver-cuda = $v, kmod-nvidia-latest-dkms = $v,
    nvidia-driver-cuda-libs = $v"
fi
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
