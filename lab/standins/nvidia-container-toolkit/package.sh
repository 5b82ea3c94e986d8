# nvidia-container-toolkit: nvidia-ctk (really edits containerd's or docker's
# config, as the real one does), nvidia-container-runtime (a shim that hands
# every call to runc, so containers still run) and nvidia-container-runtime-hook
# (asks the node's driver before Docker's stand-in daemon starts a container
# with GPUs). Three releases, same name.
pkg_variants() { printf '%s\n' 1.15.0 1.16.2 1.17.8; }
if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=nvidia-container-toolkit
  PKG_VERSION=$PKG_VARIANT-1
  PKG_SUMMARY="NVIDIA Container Toolkit $PKG_VARIANT (stand-in)"
  PKG_DEB_DEPENDS="python3"
  # The real toolkit is split; one stand-in answers for every part.
  PKG_PROVIDES="nvidia-container-toolkit-base (= $PKG_VERSION), nvidia-container-runtime, libnvidia-container-tools"
fi
pkg_stage() {
  mkdir -p "$1/usr/lib/gpuctl-lab"
  echo "$PKG_VARIANT" >"$1/usr/lib/gpuctl-lab/nvidia-container-toolkit-version"
}
# NVIDIA's container toolkit repository (libnvidia-container).
PKG_REPO=container-toolkit
