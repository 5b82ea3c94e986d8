# libnccl2 (RHEL: libnccl): the NCCL runtime, a stub library whose
# ncclGetVersion() answers the release. Pin one with libnccl2=2.23.4-1+cuda12.6.
source "$PKG_DIR/releases.sh"
source "$PKG_DIR/../stub-lib.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NCCL_RELEASES; }
if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=libnccl2
  PKG_RPM_NAME=libnccl
  PKG_ARCH=amd64 # a real (stub) ELF library inside
  PKG_VERSION=$PKG_VARIANT
  PKG_SUMMARY="NVIDIA Collective Communication Library (NCCL) runtime (stub)"
fi
pkg_stage() {
  local v=${PKG_VARIANT%%-*} lib=$1/usr/lib/x86_64-linux-gnu
  IFS=. read -r major minor patch <<<"$v"
  stub_lib "$lib/libnccl.so.$v" libnccl.so.2 \
    "int ncclGetVersion(int *v) { *v = $((major * 10000 + minor * 100 + patch)); return 0; }"
  ln -s "libnccl.so.$v" "$lib/libnccl.so.2"
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
