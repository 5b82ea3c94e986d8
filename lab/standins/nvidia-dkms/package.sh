# The NVIDIA kernel module, simulated: a version file, a boot-time unit that
# "loads" it (records it in /run) when nouveau is blacklisted, and a postinst
# that says a reboot is needed. Ubuntu's name nvidia-dkms-<branch>; RHEL's
# kmod-nvidia-latest-dkms (one name, a version per branch).
source "$PKG_DIR/../nvidia-driver/branches.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_RELEASES; }

if [ -n "$PKG_VARIANT" ]; then
  b=${PKG_VARIANT%%.*}
  PKG_NAME=nvidia-dkms-$b
  PKG_RPM_NAME=kmod-nvidia-latest-dkms
  PKG_VERSION=$(nvidia_deb_version "$PKG_VARIANT")
  PKG_VERSION_RPM=$(nvidia_rpm_version "$PKG_VARIANT")
  PKG_SUMMARY="NVIDIA kernel module (stand-in), branch $b"
  PKG_DEB_DEPENDS="gpuctl-lab-common, python3"
  PKG_RPM_REQUIRES="gpuctl-lab-common"
  # One module at a time: switching branches removes the other one, as apt does
  # with the real packages.
  PKG_PROVIDES="nvidia-dkms, nvidia-kernel-module"
  PKG_CONFLICTS="nvidia-dkms"
fi

pkg_stage() {
  mkdir -p "$1/usr/lib/gpuctl-lab/nvidia"
  echo "${PKG_VERSION%-*}" >"$1/usr/lib/gpuctl-lab/nvidia/module-version"
}
# Ubuntu's restricted component; on Rocky, NVIDIA's CUDA repository.
PKG_REPO_DEB=ubuntu/restricted
PKG_REPO_RPM=cuda
