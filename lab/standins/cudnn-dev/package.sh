# libcudnn9-dev-cuda-<major> (RHEL: libcudnn9-devel-cuda-<major>): the headers,
# here cudnn_version.h with the real CUDNN_MAJOR/MINOR/PATCHLEVEL defines.
source "$PKG_DIR/../cudnn/release.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $CUDNN_VARIANTS; }
if [ -n "$PKG_VARIANT" ]; then
  cudnn_variant
  PKG_NAME=libcudnn9-dev-cuda-$CUDNN_CUDA
  PKG_RPM_NAME=libcudnn9-devel-cuda-$CUDNN_CUDA
  PKG_VERSION=$CUDNN_RELEASE-1
  PKG_SUMMARY="NVIDIA cuDNN 9 development files for CUDA $CUDNN_CUDA"
  PKG_DEB_DEPENDS="libcudnn9-cuda-$CUDNN_CUDA (= $PKG_VERSION)"
  PKG_RPM_REQUIRES="libcudnn9-cuda-$CUDNN_CUDA = $CUDNN_RELEASE"
  PKG_PROVIDES="libcudnn9-dev"
  PKG_CONFLICTS="libcudnn9-dev"
fi
pkg_stage() {
  IFS=. read -r major minor patch _ <<<"$CUDNN_RELEASE"
  mkdir -p "$1/usr/include" "$1/usr/lib/x86_64-linux-gnu"
  sed -e "s/@MAJOR@/$major/" -e "s/@MINOR@/$minor/" -e "s/@PATCH@/$patch/" \
    "$PKG_DIR/cudnn_version.h.in" >"$1/usr/include/cudnn_version.h"
  ln -s libcudnn.so.9 "$1/usr/lib/x86_64-linux-gnu/libcudnn.so"
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
