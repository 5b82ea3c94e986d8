# libcudnn8: the cuDNN 8 runtime library, a stub whose cudnnGetVersion()
# answers the release. NVIDIA names the CUDA build in the version, not the
# package: 8.9.7.29-1+cuda12.2 (rpm: release 1.cuda12.2), one package name
# for every build, as NVIDIA's repository has it.
source "$PKG_DIR/../cudnn/release.sh"
source "$PKG_DIR/../stub-lib.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $CUDNN8_VARIANTS; }
if [ -n "$PKG_VARIANT" ]; then
  cudnn_variant
  PKG_NAME=libcudnn8
  PKG_VERSION=$CUDNN_RELEASE-1+cuda$CUDNN_CUDA
  PKG_VERSION_RPM=$CUDNN_RELEASE-1.cuda$CUDNN_CUDA
  PKG_SUMMARY="NVIDIA cuDNN 8 runtime for CUDA $CUDNN_CUDA (stub library)"
  PKG_ARCH=amd64 # a real (stub) ELF library inside
fi
pkg_stage() {
  IFS=. read -r major minor patch _ <<<"$CUDNN_RELEASE"
  # cuDNN 8 counts its version in thousands (8.9.7 is 8907).
  cudnn_stage_lib "$1" 8 $((major * 1000 + minor * 100 + patch))
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
