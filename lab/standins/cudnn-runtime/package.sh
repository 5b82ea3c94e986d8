# libcudnn9-cuda-<major>: the cuDNN runtime library, a stub whose
# cudnnGetVersion() answers the release. One CUDA flavour at a time (same files).
source "$PKG_DIR/../cudnn/release.sh"
source "$PKG_DIR/../stub-lib.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $CUDNN_VARIANTS; }
if [ -n "$PKG_VARIANT" ]; then
  cudnn_variant
  PKG_NAME=libcudnn9-cuda-$CUDNN_CUDA
  PKG_VERSION=$CUDNN_RELEASE-1
  PKG_SUMMARY="NVIDIA cuDNN 9 runtime for CUDA $CUDNN_CUDA (stub library)"
  PKG_ARCH=amd64 # a real (stub) ELF library inside
  PKG_PROVIDES="libcudnn9"
  PKG_CONFLICTS="libcudnn9"
fi
pkg_stage() {
  IFS=. read -r major minor patch _ <<<"$CUDNN_RELEASE"
  cudnn_stage_lib "$1" 9 $((major * 10000 + minor * 100 + patch))
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
