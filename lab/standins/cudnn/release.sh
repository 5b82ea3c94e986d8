# The cuDNN releases the stand-ins carry and the CUDA majors each is built for,
# one variant per pair (<cuda major>:<release>): 9.1 is the inventory's
# default (versions.cudnn), 9.13 the current one. Same package names, several
# versions, as NVIDIA's repository has them.
CUDNN_VARIANTS="12:9.1.1.17 12:9.13.0.50 13:9.13.0.50"
# Sets CUDNN_CUDA (the CUDA major) and CUDNN_RELEASE from PKG_VARIANT.
cudnn_variant() {
  CUDNN_CUDA=${PKG_VARIANT%%:*}
  CUDNN_RELEASE=${PKG_VARIANT#*:}
}
