# Rocky 9's kernel packages for one newer kernel than the node runs, as `dnf
# update` brings one in: kernel-core (the image and module tree), the kernel
# metapackage, and kernel-devel (the build tree DKMS needs). Placeholder
# files where the real ones put theirs; kernel-core's scriptlet runs the
# kernel-install plugin DKMS ships. Nothing installs them on a fresh node.
# And kernel-devel of the kernel the nodes run (the host's, `uname -r` where
# the repository is built), which AppStream has for the kernel a server runs
# and a fresh install lacks. On EL, `kernel-devel-$(uname -r)` names it by
# name, version, release and arch; the host's release (6.18.44-fc-v782) is
# no EL version-release, so this one is named kernel-devel-K outright and
# the same spec finds it (docs/standins.md).
KREL=5.14.0-503.22.1.el9_5 # version-release of the packages
KVER=$KREL.x86_64          # the kernel release (uname -r)
RUNNING=$(uname -r)
pkg_variants() { printf '%s\n' core meta devel running-devel; }

case "$PKG_VARIANT" in
  core)
    PKG_NAME=kernel-core
    PKG_SUMMARY="The Linux kernel (gpuctl lab stand-in: placeholder files)"
    PKG_REPO=rocky/BaseOS
    ;;
  meta)
    PKG_NAME=kernel
    PKG_SUMMARY="The Linux kernel, metapackage"
    PKG_RPM_REQUIRES="kernel-core = $KREL"
    PKG_REPO=rocky/BaseOS
    ;;
  devel)
    PKG_NAME=kernel-devel
    PKG_SUMMARY="Development package for building kernel modules to match the kernel (stand-in)"
    PKG_REPO=rocky/AppStream
    ;;
  running-devel)
    PKG_NAME=kernel-devel-$RUNNING
    PKG_SUMMARY="Development package for building kernel modules to match the running kernel (stand-in)"
    PKG_REPO=rocky/AppStream
    ;;
esac
PKG_VERSION=$KREL
if [ "$PKG_VARIANT" = running-devel ]; then
  KVER=$RUNNING
  PKG_VERSION=${KVER%%-*}-1.lab
fi
# kernel-devel puts build/ in /lib/modules/K but does not own the directory:
# kernel-core does, and dnf takes the owner of /lib/modules/<uname -r> for
# the running kernel, which it refuses to remove.
case $PKG_VARIANT in *devel) PKG_RPM_UNOWNED_DIRS="/lib/modules/$KVER" ;; esac
PKG_FORMATS=rpm
# x86_64 as the real ones, though only placeholders are inside: dnf names a
# kernel's packages by its release, kernel-devel-<uname -r> ending in .x86_64,
# which a noarch package would not match.
PKG_ARCH=amd64

pkg_stage() {
  local d=$1 line="gpuctl lab placeholder, not a real"
  case "$PKG_VARIANT" in
    core)
      mkdir -p "$d/boot" "$d/lib/modules/$KVER/kernel/drivers/net/ethernet/mellanox/mlx5/core"
      echo "$line kernel image ($KVER)" >"$d/lib/modules/$KVER/vmlinuz"
      # The real package lists /boot/vmlinuz-K as %ghost and kernel-install
      # copies it there; here the package ships the copy.
      cp "$d/lib/modules/$KVER/vmlinuz" "$d/boot/vmlinuz-$KVER"
      echo "$line in-tree module (mlx5_core, $KVER)" \
        >"$d/lib/modules/$KVER/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko.xz"
      echo "kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko.xz:" >"$d/lib/modules/$KVER/modules.dep"
      ;;
    devel | running-devel)
      # DKMS takes a kernel as having headers when build/include exists.
      mkdir -p "$d/usr/src/kernels/$KVER/include/generated" "$d/lib/modules/$KVER"
      echo "# $line kernel build tree ($KVER)" >"$d/usr/src/kernels/$KVER/Makefile"
      echo "/* $line header ($KVER) */" >"$d/usr/src/kernels/$KVER/include/generated/utsrelease.h"
      ln -s "/usr/src/kernels/$KVER" "$d/lib/modules/$KVER/build"
      ;;
  esac
}
