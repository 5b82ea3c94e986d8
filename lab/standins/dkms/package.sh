# dkms: Dynamic Kernel Module Support, as the two distributions ship it: Ubuntu
# 22.04's 2.8.7 (deb) and EPEL 9's 3.1.4 (rpm). One tool, usr/sbin/dkms, told
# its release by a version file; each release gets its own kernel hooks
# (deb-root/, rpm-root/), where its real package puts them.
pkg_variants() { printf '%s\n' 2.8.7-2ubuntu2.2 3.1.4-1.el9; }

if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=dkms
  PKG_VERSION=$PKG_VARIANT
  PKG_SUMMARY="Dynamic Kernel Module Support ${PKG_VARIANT%%-*} (gpuctl lab stand-in)"
  case "$PKG_VARIANT" in
    *ubuntu*) PKG_FORMATS=deb PKG_DEB_DEPENDS="gpuctl-lab-common, python3" ;;
    *) PKG_FORMATS=rpm PKG_RPM_REQUIRES="gpuctl-lab-common" ;;
  esac
fi
# Ubuntu's main archive; on Rocky, EPEL (RHEL has no dkms of its own).
PKG_REPO_DEB=ubuntu/main
PKG_REPO_RPM=epel

pkg_stage() {
  local hooks=rpm-root
  case "$PKG_VARIANT" in *ubuntu*) hooks=deb-root ;; esac
  cp -a "$PKG_DIR/$hooks/." "$1/"
  mkdir -p "$1/usr/lib/gpuctl-lab/dkms"
  echo "${PKG_VARIANT%%-*}" >"$1/usr/lib/gpuctl-lab/dkms/version"
}
