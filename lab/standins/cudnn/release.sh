# The cuDNN releases the stand-ins carry and the CUDA majors each is built for,
# one variant per pair (<cuda major>:<release>): 9.1 is the inventory's
# default (versions.cudnn), 9.13 the current one. Same package names, several
# versions, as NVIDIA's repository has them.
CUDNN_VARIANTS="12:9.1.1.17 12:9.13.0.50 13:9.13.0.50"
# cuDNN 8 (<cuda major.minor>:<release>): one package name for every CUDA,
# the build in the version (libcudnn8 8.9.7.29-1+cuda12.2), as NVIDIA's
# repository has it; an 11.8 build beside the 12.x ones, so a step must pick.
CUDNN8_VARIANTS="12.2:8.9.7.29 11.8:8.9.7.29 12.1:8.9.2.26"
# Sets CUDNN_CUDA (the CUDA major) and CUDNN_RELEASE from PKG_VARIANT.
cudnn_variant() {
  CUDNN_CUDA=${PKG_VARIANT%%:*}
  CUDNN_RELEASE=${PKG_VARIANT#*:}
}
# cudnn_stage_lib ROOT MAJOR CODE: the stub libcudnn.so.<release> and its
# soname link under ROOT; cudnnGetVersion() returns CODE.
cudnn_stage_lib() {
  local lib=$1/usr/lib/x86_64-linux-gnu v=${CUDNN_RELEASE%.*}
  stub_lib "$lib/libcudnn.so.$v" "libcudnn.so.$2" \
    "unsigned long cudnnGetVersion(void) { return $3; }"
  ln -s "libcudnn.so.$v" "$lib/libcudnn.so.$2"
}
# cudnn_stage_header ROOT PATH MAJOR: cudnn_version.h.in at ROOT/PATH with the
# release's macros, and for cuDNN 9 the unversioned library link. cuDNN 8
# counts CUDNN_VERSION in thousands (8.9.7 is 8907), 9 in ten thousands
# (9.1.1 is 90101). NVIDIA's libcudnn8-dev points libcudnn.so through
# update-alternatives, beside cuDNN 9's, so the two install together; its
# stand-in ships no such link rather than a file cuDNN 9's -dev also owns.
cudnn_stage_header() {
  local major minor patch scale=10000
  IFS=. read -r major minor patch _ <<<"$CUDNN_RELEASE"
  [ "$3" -ge 9 ] || scale=1000
  mkdir -p "$(dirname "$1/$2")"
  sed -e "s/@MAJOR@/$major/" -e "s/@MINOR@/$minor/" -e "s/@PATCH@/$patch/" \
    -e "s/CUDNN_MAJOR \* 10000/CUDNN_MAJOR * $scale/" \
    "$PKG_DIR/../cudnn-dev/cudnn_version.h.in" >"$1/$2"
  [ "$3" -lt 9 ] && return 0
  mkdir -p "$1/usr/lib/x86_64-linux-gnu"
  ln -s "libcudnn.so.$3" "$1/usr/lib/x86_64-linux-gnu/libcudnn.so"
}
