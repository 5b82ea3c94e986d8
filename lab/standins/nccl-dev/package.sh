# libnccl-dev (RHEL: libnccl-devel): nccl.h with the real NCCL_MAJOR/MINOR/PATCH
# and NCCL_VERSION_CODE, and the libnccl.so link.
source "$PKG_DIR/../nccl-runtime/releases.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NCCL_RELEASES; }
if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=libnccl-dev
  PKG_RPM_NAME=libnccl-devel
  PKG_VERSION=$PKG_VARIANT
  PKG_SUMMARY="NVIDIA Collective Communication Library (NCCL) development files"
  PKG_DEB_DEPENDS="libnccl2 (= $PKG_VARIANT)"
  PKG_RPM_REQUIRES="libnccl = ${PKG_VARIANT%-*}-${PKG_VARIANT##*-}"
fi
pkg_stage() {
  local v=${PKG_VARIANT%%-*}
  IFS=. read -r major minor patch <<<"$v"
  mkdir -p "$1/usr/include" "$1/usr/lib/x86_64-linux-gnu"
  sed -e "s/@MAJOR@/$major/" -e "s/@MINOR@/$minor/" -e "s/@PATCH@/$patch/" \
    -e "s/@CODE@/$((major * 10000 + minor * 100 + patch))/" "$PKG_DIR/nccl.h.in" \
    >"$1/usr/include/nccl.h"
  ln -s libnccl.so.2 "$1/usr/lib/x86_64-linux-gnu/libnccl.so"
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
