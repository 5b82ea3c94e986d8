# The NVIDIA kernel module, simulated: a version file, a boot-time unit that
# "loads" it (records it in /run) when nouveau is blacklisted, a postinst
# that says a reboot is needed, and the module's source registered with DKMS
# (/usr/src/nvidia-<release>/dkms.conf) so DKMS "builds" it per kernel. Ubuntu's name nvidia-dkms-<branch>; RHEL's
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
  # DKMS builds it, as for the real packages: Ubuntu's dkms; on EL9, EPEL's.
  PKG_DEB_DEPENDS="gpuctl-lab-common, python3, dkms"
  PKG_RPM_REQUIRES="gpuctl-lab-common, dkms"
  # One module at a time: switching branches removes the other one, as apt does
  # with the real packages.
  PKG_PROVIDES="nvidia-dkms, nvidia-kernel-module"
  PKG_CONFLICTS="nvidia-dkms"
fi

pkg_stage() {
  mkdir -p "$1/usr/lib/gpuctl-lab/nvidia"
  echo "${PKG_VERSION%-*}" >"$1/usr/lib/gpuctl-lab/nvidia/module-version"
  # The driver's dkms.conf (its module list as NVIDIA's kernel-open tree
  # builds them); DKMS itself moves them to its distribution's directory.
  local src=$1/usr/src/nvidia-$PKG_VARIANT i=0 m
  mkdir -p "$src"
  {
    echo "PACKAGE_NAME=\"nvidia\""
    echo "PACKAGE_VERSION=\"$PKG_VARIANT\""
    echo "AUTOINSTALL=\"yes\""
    echo "MAKE[0]=\"'make' -j\\\`nproc\\\` NV_EXCLUDE_BUILD_MODULES='' KERNEL_UNAME=\\\${kernelver} modules\""
    echo "CLEAN=\"make clean\""
    for m in nvidia nvidia-modeset nvidia-drm nvidia-uvm nvidia-peermem; do
      echo "BUILT_MODULE_NAME[$i]=\"$m\""
      echo "BUILT_MODULE_LOCATION[$i]=\"kernel-open\""
      echo "DEST_MODULE_LOCATION[$i]=\"/kernel/drivers/video\""
      i=$((i + 1))
    done
  } >"$src/dkms.conf"
  echo "gpuctl lab placeholder for the NVIDIA kernel module sources ($PKG_VARIANT)" >"$src/README"
}
# Ubuntu's restricted component; on Rocky, NVIDIA's CUDA repository.
PKG_REPO_DEB=ubuntu/restricted
PKG_REPO_RPM=cuda
