# nvidia-driver-<branch>: what an admin installs on Ubuntu. A metapackage, as the
# real one is; the kernel module and the tools come from nvidia-dkms-<branch> and
# nvidia-utils-<branch>. (dnf's equivalent is cuda-drivers, ../cuda-drivers.)
source "$PKG_DIR/branches.sh"
# shellcheck disable=SC2086 # the list's words are the variants
pkg_variants() { printf '%s\n' $NVIDIA_RELEASES; }

if [ -n "$PKG_VARIANT" ]; then
  b=${PKG_VARIANT%%.*} v=$(nvidia_deb_version "$PKG_VARIANT")
  PKG_NAME=nvidia-driver-$b
  PKG_VERSION=$v
  PKG_SUMMARY="NVIDIA driver metapackage, branch $b"
  # Exact versions, as Ubuntu's: apt must be told every one to pin a release.
  PKG_DEB_DEPENDS="nvidia-dkms-$b (= $v), nvidia-utils-$b (= $v), libnvidia-compute-$b (= $v)"
  PKG_FORMATS=deb
fi
# Ubuntu's restricted component (nvidia-driver-550 is Ubuntu's own package).
PKG_REPO=ubuntu/restricted
