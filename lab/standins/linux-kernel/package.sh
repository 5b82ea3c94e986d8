# Ubuntu 22.04's kernel packages for one newer kernel than the node runs, as
# `apt upgrade` brings one in: the image, its headers, and the metapackages
# that pull them. Placeholder files where the real ones put theirs; the
# maintainer scripts run the /etc/kernel hooks as Ubuntu's do, which is what
# makes DKMS build (or fail to build) for the new kernel. Nothing installs
# them on a fresh node: the node keeps booting the host's kernel.
#
# And the headers of the kernel the nodes run (the host's, `uname -r` where
# the repository is built), as the archive has them for the kernel a server
# was installed with: a fresh node lacks them (a minimal or cloud image), so
# DKMS cannot build the NVIDIA module until gpu.driver installs them.
KVER=5.15.0-131-generic # the kernel release (uname -r) of this kernel
KPKG=5.15.0-131.141     # its packages' version
KMETA=5.15.0.131.129    # the linux-generic metapackages' version
RUNNING=$(uname -r)
pkg_variants() { printf '%s\n' image headers image-meta headers-meta running-headers; }

case "$PKG_VARIANT" in
  image)
    PKG_NAME=linux-image-$KVER PKG_VERSION=$KPKG
    PKG_SUMMARY="Signed kernel image generic (gpuctl lab stand-in: placeholder files)"
    ;;
  headers)
    PKG_NAME=linux-headers-$KVER PKG_VERSION=$KPKG
    PKG_SUMMARY="Linux kernel headers for version ${KVER%-generic} on 64 bit x86 SMP (stand-in)"
    ;;
  image-meta)
    PKG_NAME=linux-image-generic PKG_VERSION=$KMETA
    PKG_SUMMARY="Generic Linux kernel image (metapackage)"
    PKG_DEB_DEPENDS="linux-image-$KVER"
    ;;
  running-headers)
    KVER=$RUNNING
    PKG_NAME=linux-headers-$KVER PKG_VERSION=${KVER%%-*}-1
    PKG_SUMMARY="Linux kernel headers for version $KVER, the kernel the lab's nodes run (stand-in)"
    ;;
  headers-meta)
    PKG_NAME=linux-headers-generic PKG_VERSION=$KMETA
    PKG_SUMMARY="Generic Linux kernel headers (metapackage)"
    PKG_DEB_DEPENDS="linux-headers-$KVER"
    ;;
esac
PKG_FORMATS=deb
PKG_REPO=ubuntu/main
PKG_ARCH=amd64 # as the real ones, though only placeholders are inside

pkg_stage() {
  local d=$1 line="gpuctl lab placeholder, not a real"
  case "$PKG_VARIANT" in
    image)
      # One package where Ubuntu splits the image and linux-modules-K: what
      # gpuctl looks at is that the kernel and its module tree exist.
      mkdir -p "$d/boot" "$d/lib/modules/$KVER/kernel/drivers/net/ethernet/mellanox/mlx5/core"
      echo "$line kernel image ($KVER)" >"$d/boot/vmlinuz-$KVER"
      echo "$line in-tree module (mlx5_core, $KVER)" \
        >"$d/lib/modules/$KVER/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko"
      echo "kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko:" >"$d/lib/modules/$KVER/modules.dep"
      ;;
    headers | running-headers)
      # DKMS takes a kernel as having headers when build/include exists.
      mkdir -p "$d/usr/src/linux-headers-$KVER/include/generated" "$d/lib/modules/$KVER"
      echo "# $line kernel build tree ($KVER)" >"$d/usr/src/linux-headers-$KVER/Makefile"
      echo "/* $line header ($KVER) */" >"$d/usr/src/linux-headers-$KVER/include/generated/utsrelease.h"
      ln -s "/usr/src/linux-headers-$KVER" "$d/lib/modules/$KVER/build"
      ;;
  esac
}
