#!/bin/bash
# PID 1 of a lab node's fresh pid namespace, until it becomes systemd.
#
# Started by the supervisor as
#   ip netns exec gl-<lab>-<node> unshare --mount --uts --ipc --pid --cgroup \
#     --fork --kill-child node-init.sh NODE_DIR
# so it already has the node's network, hostname, mount, ipc, pid and cgroup
# namespaces. It builds the node's root file system and execs systemd in it:
#   /            overlayfs: upper = NODE_DIR/upper (the node's disk), lower =
#                the lab's base layer for the node's OS, then the host's /
#   /proc        fresh procfs (this pid namespace); /proc/sys read-only except
#                /proc/sys/net (per netns); a per-boot boot_id bound over
#                /proc/sys/kernel/random/boot_id (the real one is host-wide)
#   /sys         the netns's sysfs, read-only; cgroup2 at /sys/fs/cgroup (the
#                node's own cgroup as its root)
#   /dev         tmpfs with null, zero, full, random, urandom, tty, a private
#                devpts, shm
#   /run, /tmp   tmpfs
#   /srv/gpuctl-lab-nfs  the lab's NFS store (STATE/nfs), read-write
#   /srv/gpuctl-lab-ib   the lab's IB fabric (STATE/ib-fabric), read-write
#   the lab home is hidden (it holds the lab's private key and the package
#   repository: nodes fetch packages over HTTP, as from a site's mirror)
# Then pivot_root into it, detach the host's tree, drop the capabilities that
# act on the shared kernel (modules, clock), and exec systemd.
set -euo pipefail

node_dir=$1
# shellcheck source=/dev/null
. "$node_dir/boot.env" # NODE LAB_NAME BOOT BOOT_ID UPPER WORK BASE DEVSKEL MERGED NFS_STORE IB_FABRIC HIDE

m=$MERGED
hostname "$NODE"
mount --make-rprivate /
# overlayfs refuses a lower layer inside another one (ELOOP), and the base
# layer lives under the host's /: give it a file system of its own, a small
# tmpfs copy (xattrs and whiteouts kept by cp -a).
mkdir -p "$node_dir/lower"
mount -t tmpfs -o mode=755,size=16m tmpfs "$node_dir/lower"
cp -a "$BASE/." "$node_dir/lower/"
mount -t overlay overlay -o "lowerdir=$node_dir/lower:/,upperdir=$UPPER,workdir=$WORK" "$m"

# /run first: it holds the boot id file bound into /proc below.
mount -t tmpfs -o mode=755,nosuid,nodev,size=64m tmpfs "$m/run"
mkdir -p "$m/run/gpuctl-lab"
echo "$BOOT_ID" >"$m/run/gpuctl-lab/boot_id"
echo "$BOOT" >"$m/run/gpuctl-lab/boot_count"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=256m tmpfs "$m/tmp"

mount -t proc -o nosuid,nodev,noexec proc "$m/proc"
mount --bind "$m/proc/sys" "$m/proc/sys"
mount --bind "$m/proc/sys/net" "$m/proc/sys/net"
mount -o remount,bind,ro "$m/proc/sys"
mount --bind -o ro "$m/run/gpuctl-lab/boot_id" "$m/proc/sys/kernel/random/boot_id"
[ -e "$m/proc/sysrq-trigger" ] && mount --bind -o ro /dev/null "$m/proc/sysrq-trigger"
# The driver's /proc/driver entries (MIG capabilities) are the GPU stand-ins'
# to write: a small tmpfs of the node's own, empty at every boot as the real
# ones are before the module loads.
[ -d "$m/proc/driver" ] && mount -t tmpfs -o mode=755,nosuid,nodev,noexec,size=1m tmpfs "$m/proc/driver"

mount --rbind /sys "$m/sys"
mount -o remount,bind,ro "$m/sys"
# cgroup2 at /sys/fs/cgroup: systemd then runs in unified mode inside the
# node's own cgroup (this cgroup namespace's root) and never touches the
# host's v1 hierarchies, which all nodes would otherwise share.
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$m/sys/fs/cgroup"

# /dev from the lab's skeleton (device nodes and links, see dev_skeleton).
mount -t tmpfs -o mode=755,nosuid,size=1m tmpfs "$m/dev"
cp -a "$DEVSKEL/." "$m/dev/"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$m/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m tmpfs "$m/dev/shm"

# The lab's NFS store, read-write and the same directory in every node: the
# simulated NFS transport (nfsd-sim publishes exports there, mount.nfs binds
# them; docs/lab.md, NFS).
if [ -n "${NFS_STORE:-}" ]; then
  mkdir -p "$NFS_STORE" "$m/srv/gpuctl-lab-nfs"
  mount --bind "$NFS_STORE" "$m/srv/gpuctl-lab-nfs"
fi
# The lab's InfiniBand fabric, the same directory in every node: who runs a
# subnet manager on which rail (the IB stand-ins read it; docs/standins.md).
if [ -n "${IB_FABRIC:-}" ]; then
  mkdir -p "$IB_FABRIC" "$m/srv/gpuctl-lab-ib"
  mount --bind "$IB_FABRIC" "$m/srv/gpuctl-lab-ib"
fi

# The lab's own state (every node's disk) must not show inside a node, yet the
# path stays the node's to use, as on a real machine (the Kubernetes
# stand-in keeps its API state under /var/lib/gpuctl-lab): it is covered by a
# directory of this node's own, kept beside its disk so it survives reboots.
for h in $HIDE; do
  if [ "$h" != / ] && [ -d "$m$h" ]; then
    mkdir -p "$node_dir/hidden$h"
    mount --bind "$node_dir/hidden$h" "$m$h"
  fi
done

cd "$m"
pivot_root . .
umount -l .
cd /

exec setpriv --bounding-set -sys_module,-sys_time,-sys_rawio,-wake_alarm \
  env -i container=gpuctl-lab GPUCTL_LAB="$LAB_NAME" GPUCTL_LAB_NODE="$NODE" \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /lib/systemd/systemd --system
