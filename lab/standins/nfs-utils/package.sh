# nfs-utils for the Rocky node. The kernel has no NFS, so the transport is the
# lab's (docs/lab.md, NFS): mount.nfs binds the server's export from the lab's
# shared store, nfs-server.service publishes exports there; exportfs keeps
# /var/lib/nfs/etab from /etc/exports as the real one does. The Ubuntu nodes
# install Debian's real nfs-kernel-server and nfs-common, and get the same
# mount.nfs and nfs-server.service from their base layer (lab/lib/disk.sh).
PKG_NAME=nfs-utils
PKG_VERSION=2.5.4-1
PKG_SUMMARY="NFS utilities (stand-in: the lab's simulated NFS transport)"
PKG_FORMATS=rpm
pkg_stage() {
  ln -s ../lib/gpuctl-lab/nfs/mount.nfs "$1/usr/sbin/mount.nfs"
  ln -s ../lib/gpuctl-lab/nfs/mount.nfs "$1/usr/sbin/mount.nfs4"
  mkdir -p "$1/usr/lib/systemd/system"
  cp "$PKG_DIR/root/usr/lib/gpuctl-lab/nfs/nfs-server.service" "$1/usr/lib/systemd/system/"
}
# Rocky 9's BaseOS.
PKG_REPO=rocky/BaseOS
