# cuda-drivers-<branch>: pins a driver branch, as NVIDIA's repositories offer.
source "$PKG_DIR/../nvidia-driver/branches.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_RELEASES; }

if [ -n "$PKG_VARIANT" ]; then
  v=$PKG_VARIANT
  PKG_NAME=cuda-drivers-${v%%.*}
  PKG_VERSION=$v-1
  PKG_SUMMARY="CUDA driver metapackage, branch ${v%%.*}"
  PKG_DEB_DEPENDS="cuda-drivers (= $v-1)"
  PKG_RPM_REQUIRES="cuda-drivers = $v"
fi
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
