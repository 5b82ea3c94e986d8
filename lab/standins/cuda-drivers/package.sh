# cuda-drivers: NVIDIA's repository metapackage, one version per driver release
# (the newest wins unless pinned: `dnf install cuda-drivers-550.127.05`,
# `apt-get install cuda-drivers=550.127.05-1`).
source "$PKG_DIR/../nvidia-driver/branches.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_RELEASES; }

if [ -n "$PKG_VARIANT" ]; then
  v=$PKG_VARIANT e=$(nvidia_rpm_version "$PKG_VARIANT")
  e=${e%%:*}
  PKG_NAME=cuda-drivers
  PKG_VERSION=$v-1
  PKG_SUMMARY="CUDA driver metapackage ($v)"
  PKG_DEB_DEPENDS="nvidia-driver-${v%%.*} (= $(nvidia_deb_version "$v"))"
  # With the driver packages' epoch, as NVIDIA's (nvidia-driver-cuda = 3:550.54.14).
  PKG_RPM_REQUIRES="nvidia-driver-cuda = $e:$v, kmod-nvidia-latest-dkms = $e:$v,
    nvidia-driver-cuda-libs = $e:$v"
fi
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
