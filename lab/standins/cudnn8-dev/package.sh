# libcudnn8-dev (RHEL: libcudnn8-devel): cuDNN 8's headers, here the version
# header at the path the deb ships it (cudnn_version_v8.h, which the real
# package's alternatives link as cudnn_version.h), with the real macros.
source "$PKG_DIR/../cudnn/release.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $CUDNN8_VARIANTS; }
if [ -n "$PKG_VARIANT" ]; then
  cudnn_variant
  PKG_NAME=libcudnn8-dev
  PKG_RPM_NAME=libcudnn8-devel
  PKG_VERSION=$CUDNN_RELEASE-1+cuda$CUDNN_CUDA
  PKG_VERSION_RPM=$CUDNN_RELEASE-1.cuda$CUDNN_CUDA
  PKG_SUMMARY="NVIDIA cuDNN 8 development files for CUDA $CUDNN_CUDA"
  PKG_DEB_DEPENDS="libcudnn8 (= $PKG_VERSION)"
  PKG_RPM_REQUIRES="libcudnn8 = $CUDNN_RELEASE-1.cuda$CUDNN_CUDA"
fi
pkg_stage() {
  cudnn_stage_header "$1" usr/include/x86_64-linux-gnu/cudnn_version_v8.h 8
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
