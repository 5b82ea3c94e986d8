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
  cudnn_stage_header "$1" usr/include/cudnn_version.h 9
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
