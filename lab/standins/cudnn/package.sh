# cudnn9-cuda-<major>: NVIDIA's metapackage for cuDNN 9 (runtime + headers).
source "$PKG_DIR/release.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $CUDNN_VARIANTS; }
if [ -n "$PKG_VARIANT" ]; then
  cudnn_variant
  PKG_NAME=cudnn9-cuda-$CUDNN_CUDA
  PKG_VERSION=$CUDNN_RELEASE-1
  PKG_SUMMARY="NVIDIA cuDNN 9 for CUDA $CUDNN_CUDA (metapackage)"
  PKG_DEB_DEPENDS="libcudnn9-cuda-$CUDNN_CUDA (= $PKG_VERSION), libcudnn9-dev-cuda-$CUDNN_CUDA (= $PKG_VERSION)"
  PKG_RPM_REQUIRES="libcudnn9-cuda-$CUDNN_CUDA = $CUDNN_RELEASE, libcudnn9-devel-cuda-$CUDNN_CUDA = $CUDNN_RELEASE"
fi
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
