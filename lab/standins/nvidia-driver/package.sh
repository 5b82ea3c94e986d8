# nvidia-driver-<branch>: what an admin installs on Ubuntu. A metapackage, as the
# real one is; the kernel module and the tools come from nvidia-dkms-<branch> and
# nvidia-utils-<branch>. (dnf's equivalent is cuda-drivers, ../cuda-drivers.)
source "$PKG_DIR/branches.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_BRANCHES; }

if [ -n "$PKG_VARIANT" ]; then
  v=$(nvidia_release "$PKG_VARIANT")-1
  PKG_NAME=nvidia-driver-$PKG_VARIANT
  PKG_VERSION=$v
  PKG_SUMMARY="NVIDIA driver metapackage, branch $PKG_VARIANT"
  PKG_DEB_DEPENDS="nvidia-dkms-$PKG_VARIANT (= $v), nvidia-utils-$PKG_VARIANT (= $v),
    libnvidia-compute-$PKG_VARIANT (= $v)"
  PKG_FORMATS=deb
fi
# Ubuntu's restricted component (nvidia-driver-550 is Ubuntu's own package).
PKG_REPO=ubuntu/restricted
