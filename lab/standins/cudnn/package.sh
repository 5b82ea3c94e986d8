# cudnn9-cuda-<major>: NVIDIA's metapackage for cuDNN 9 (runtime + headers).
source "$PKG_DIR/release.sh"
pkg_variants() { printf '%s\n' $CUDNN_CUDA_MAJORS; }
if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=cudnn9-cuda-$PKG_VARIANT
  PKG_VERSION=$CUDNN_RELEASE-1
  PKG_SUMMARY="NVIDIA cuDNN 9 for CUDA $PKG_VARIANT (metapackage)"
  PKG_DEB_DEPENDS="libcudnn9-cuda-$PKG_VARIANT (= $PKG_VERSION), libcudnn9-dev-cuda-$PKG_VARIANT (= $PKG_VERSION)"
  PKG_RPM_REQUIRES="libcudnn9-cuda-$PKG_VARIANT = $CUDNN_RELEASE, libcudnn9-devel-cuda-$PKG_VARIANT = $CUDNN_RELEASE"
fi
