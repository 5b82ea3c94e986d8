# cuda-toolkit-<major>-<minor>: NVIDIA's package names on both apt and dnf. The
# stand-in installs /usr/local/cuda-X.Y with an nvcc that answers --version in
# the real format, version.json, and cuda.h's CUDA_VERSION; postinst points
# /usr/local/cuda (and /usr/local/cuda-<major>) at the newest toolkit installed.
pkg_variants() { printf '%s\n' 12.2 12.4 12.6 12.8 13.0; }

# variant -> full version, nvcc's V number, its "Built on" stamp and build id.
cuda_release() {
  case "$1" in
    12.2) echo "12.2.2 12.2.140 Tue_Aug_15_22:02:13_PDT_2023 33191640" ;;
    12.4) echo "12.4.1 12.4.131 Thu_Mar_28_02:18:24_PDT_2024 34097967" ;;
    12.6) echo "12.6.3 12.6.85 Tue_Oct_29_23:50:19_PDT_2024 35059454" ;;
    12.8) echo "12.8.1 12.8.93 Fri_Feb_21_20:23:50_PST_2025 35583870" ;;
    13.0) echo "13.0.1 13.0.88 Wed_Aug_20_01:58:59_PM_PDT_2025 36424714" ;;
  esac
}

if [ -n "$PKG_VARIANT" ]; then
  read -r CUDA_FULL CUDA_NVCC CUDA_BUILT CUDA_BUILD <<<"$(cuda_release "$PKG_VARIANT")"
  PKG_NAME=cuda-toolkit-${PKG_VARIANT/./-}
  PKG_VERSION=$CUDA_FULL-1
  PKG_SUMMARY="CUDA Toolkit $PKG_VARIANT (stand-in nvcc)"
fi

pkg_stage() {
  local d=$1/usr/local/cuda-$PKG_VARIANT year=${CUDA_BUILT##*_}
  local major=${PKG_VARIANT%.*} minor=${PKG_VARIANT#*.}
  mkdir -p "$d/bin" "$d/include"
  sed -e "s/@MAJMIN@/$PKG_VARIANT/g" -e "s/@NVCC@/$CUDA_NVCC/" -e "s/@BUILT@/$CUDA_BUILT/" \
    -e "s/@BUILD@/$CUDA_BUILD/" -e "s/@YEAR@/$year/" "$PKG_DIR/nvcc.in" >"$d/bin/nvcc"
  chmod 0755 "$d/bin/nvcc"
  sed -e "s/@FULL@/$CUDA_FULL/" -e "s/@NVCC@/$CUDA_NVCC/g" "$PKG_DIR/version.json.in" >"$d/version.json"
  printf '/* gpuctl lab stand-in: only the version macro of the real cuda.h. */\n#define CUDA_VERSION %d\n' \
    $((major * 1000 + minor * 10)) >"$d/include/cuda.h"
}
# NVIDIA's CUDA repository (both formats).
PKG_REPO=cuda
