# shellcheck shell=bash
# Node file systems. A node's root is an overlayfs of three layers:
#   upper   state/nodes/<node>/upper   the node's own disk: its identity
#           (hostname, machine-id, host key, profile.env) and every change
#           made in the node; kept across reboots and `down`, deleted by --purge
#   base    state/base-<os>            shared by the lab's nodes of one OS,
#           rebuilt by every `up`: OS personality (os-release, package
#           sources, the other family's package managers hidden), masked
#           units, sshd policy, root's home with the lab key, /etc/hosts
#   host /  read-only lower layer: every program comes from the host
# Whiteouts (char device 0:0) hide host files; "opaque" directories (xattr
# trusted.overlay.opaque=y) hide a whole host directory's content.

# Host units that must not run in a node: they act on the shared kernel or
# devices (udev, modules, clock, binfmt, pstore), log in on consoles, or are
# heavy services installed on the host. Units the host enables that are not in
# KEEP_UNITS are masked too (see mask_units).
MASK_UNITS=(
  systemd-udevd.service systemd-udev-trigger.service systemd-udev-settle.service
  systemd-udevd-control.socket systemd-udevd-kernel.socket systemd-hwdb-update.service
  systemd-modules-load.service kmod-static-nodes.service systemd-timesyncd.service
  systemd-binfmt.service proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount
  systemd-pstore.service systemd-random-seed.service systemd-firstboot.service
  systemd-remount-fs.service systemd-fsck-root.service systemd-machine-id-commit.service
  sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount
  sys-fs-fuse-connections.mount dev-hugepages.mount
  getty.target getty@tty1.service console-getty.service serial-getty@.service
  container-getty@.service
  apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer man-db.timer
  fstrim.timer e2scrub_all.timer e2scrub_reap.service
  postgresql.service packagekit.service packagekit-offline-update.service
)
# Generators that only matter on real hardware; each one is a process per boot.
MASK_GENERATORS=(
  systemd-cryptsetup-generator systemd-gpt-auto-generator systemd-hibernate-resume-generator
  systemd-integritysetup-generator systemd-veritysetup-generator systemd-system-update-generator
  systemd-getty-generator systemd-debug-generator postgresql-generator
)
KEEP_UNITS=(ssh.service sshd.service remote-fs.target)

# Package-manager commands hidden in the other family's nodes.
RPM_TOOLS=(/usr/bin/dnf /usr/bin/dnf-3 /usr/bin/dnf4 /usr/bin/yum /usr/bin/rpm /usr/bin/rpmdb
  /usr/bin/rpmkeys /usr/bin/rpmquery /usr/bin/rpmverify /usr/bin/createrepo_c)
DEB_TOOLS=(/usr/bin/apt /usr/bin/apt-get /usr/bin/apt-cache /usr/bin/apt-mark /usr/bin/apt-config
  /usr/bin/dpkg /usr/bin/dpkg-query /usr/bin/dpkg-deb /etc/debian_version /etc/apt)

mask_units() {
  local u=$1 unit f keep k
  local units=("${MASK_UNITS[@]}")
  for f in /etc/systemd/system/*.wants/*; do
    [ -e "$f" ] || continue
    unit=${f##*/}
    keep=0
    for k in "${KEEP_UNITS[@]}"; do [ "$k" = "$unit" ] && keep=1; done
    ((keep)) || units+=("$unit")
  done
  for unit in "${units[@]}"; do
    layer_link "$u" "/etc/systemd/system/$unit" /dev/null
  done
  for unit in "${MASK_GENERATORS[@]}"; do
    layer_link "$u" "/etc/systemd/system-generators/$unit" /dev/null
  done
}

os_release() {
  case $1 in
    ubuntu-22.04)
      cat <<'EOF'
PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
EOF
      ;;
    rocky-9)
      cat <<'EOF'
NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"
ANSI_COLOR="0;32"
LOGO="fedora-logo-icon"
CPE_NAME="cpe:/o:rocky:rocky:9::baseos"
HOME_URL="https://rockylinux.org/"
BUG_REPORT_URL="https://bugs.rockylinux.org/"
SUPPORT_END="2032-05-31"
ROCKY_SUPPORT_PRODUCT="Rocky-Linux-9"
ROCKY_SUPPORT_PRODUCT_VERSION="9.4"
REDHAT_SUPPORT_PRODUCT="Rocky Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="9.4"
EOF
      ;;
    *) die "unsupported node OS '$1' (ubuntu-22.04, rocky-9)" ;;
  esac
}

# Package sources: Ubuntu-like nodes see only their distribution's archive,
# the lab's mirror of it on the lab's nginx (http.sh), signed by the lab's
# "ubuntu" key, installed where Ubuntu keeps its archive key. Vendor
# repositories (CUDA, the container toolkit, Kubernetes, ...) are not there
# until gpuctl's repos.* steps add them, as on a fresh server. The host's
# sources, pinning, keys and lists are hidden; base_apt_lists then fills the
# lists from the archive, so they are fresh and their mtime means what it says
# (an empty lists dir with a new mtime would make tools that honour a cache
# age skip `apt-get update`).
ubuntu_sources() { # keyring
  printf '%s\n' "Types: deb" "URIs: $(lab_url)/ubuntu" "Suites: jammy" \
    "Components: main restricted universe" "Signed-By: $1"
}
disk_ubuntu() {
  local u=$1 t
  os_release ubuntu-22.04 | layer_write "$u" /usr/lib/os-release
  printf 'DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\nDISTRIB_CODENAME=jammy\nDISTRIB_DESCRIPTION="Ubuntu 22.04.4 LTS"\n' |
    layer_write "$u" /etc/lsb-release
  echo "bookworm/sid" | layer_write "$u" /etc/debian_version
  [ -e /etc/apt/sources.list ] && whiteout "$u" /etc/apt/sources.list
  opaque "$u" /etc/apt/sources.list.d
  opaque "$u" /etc/apt/preferences.d
  opaque "$u" /etc/apt/trusted.gpg.d
  [ -e /etc/apt/trusted.gpg ] && whiteout "$u" /etc/apt/trusted.gpg
  ubuntu_sources /usr/share/keyrings/ubuntu-archive-keyring.gpg |
    layer_write "$u" /etc/apt/sources.list.d/ubuntu.sources
  layer_dir "$u" /usr/share/keyrings
  cp "$LAB_REPO/keys/ubuntu.gpg" "$u/usr/share/keyrings/ubuntu-archive-keyring.gpg" # binary
  opaque "$u" /var/lib/apt/lists
  layer_dir "$u" /var/lib/apt/lists/partial
  opaque "$u" /var/cache/apt
  layer_dir "$u" /var/cache/apt/archives/partial
  # man-db's dpkg trigger rebuilds the manual's index after every install
  # that brings a man page: seconds of a node's CPU each time, for an index
  # gpuctl never reads. Off, as debconf's man-db/auto-update=false leaves it.
  [ ! -e /var/lib/man-db/auto-update ] || whiteout "$u" /var/lib/man-db/auto-update
  : | layer_write "$u" /etc/gpuctl-lab/firstboot.done # nothing to do at first boot
  disk_ubuntu_nfs "$u"
  for t in "${RPM_TOOLS[@]}"; do [ -e "$t" ] && whiteout "$u" "$t"; done
  return 0
}

# NFS on Ubuntu-like nodes: Debian's real nfs-common and nfs-kernel-server
# install, but the kernel has neither NFS client nor server, so the lab's
# simulated transport stands in for the kernel's part (docs/lab.md, NFS):
# mount.nfs (dpkg is told not to unpack the real one over it; like the real
# one it refuses until nfs-common is installed) and nfs-server.service (in
# /etc, so it wins over the package's). The Rocky node gets the same files
# from the nfs-utils stand-in.
disk_ubuntu_nfs() {
  local u=$1 sim=$LAB_LIB/../standins/nfs-utils/root/usr/lib/gpuctl-lab/nfs
  layer_write "$u" /usr/lib/gpuctl-lab/nfs/nfsd-sim 755 <"$sim/nfsd-sim"
  layer_write "$u" /usr/lib/gpuctl-lab/nfs/mount.nfs 755 <"$sim/mount.nfs"
  layer_link "$u" /usr/sbin/mount.nfs ../lib/gpuctl-lab/nfs/mount.nfs
  layer_link "$u" /usr/sbin/mount.nfs4 ../lib/gpuctl-lab/nfs/mount.nfs
  layer_write "$u" /etc/systemd/system/nfs-server.service <"$sim/nfs-server.service"
  printf '%s\n' "# gpuctl-lab: the lab's mount.nfs stands in for these (docs/lab.md, NFS)." \
    "path-exclude=/sbin/mount.nfs" "path-exclude=/sbin/mount.nfs4" \
    "path-exclude=/usr/sbin/mount.nfs" "path-exclude=/usr/sbin/mount.nfs4" |
    layer_write "$u" /etc/dpkg/dpkg.cfg.d/gpuctl-lab-nfs
}

# Rocky-like nodes: dnf/rpm see only Rocky's BaseOS and AppStream, the lab's
# mirror of them on the lab's nginx, every package signed by the lab's
# "rocky" key, installed where Rocky keeps its own (RPM-GPG-KEY-Rocky-9). The
# rpm database lives where Rocky keeps it (Debian's rpm defaults to ~/.rpmdb),
# and first boot installs gpuctl-lab-rocky-base so later rpms resolve.
# metadata_expire=0: a rebuilt repository is seen at once (dnf would otherwise
# use its cached checksums against the new files).
disk_rocky() {
  local u=$1 t url
  url=$(lab_url)
  os_release rocky-9 | layer_write "$u" /usr/lib/os-release
  for t in /etc/redhat-release /etc/rocky-release /etc/system-release; do
    echo "Rocky Linux release 9.4 (Blue Onyx)" | layer_write "$u" "$t"
  done
  echo "9" | layer_write "$u" /etc/dnf/vars/releasever
  opaque "$u" /etc/yum.repos.d
  layer_write "$u" /etc/yum.repos.d/rocky.repo <<EOF
# gpuctl-lab: Rocky Linux 9's own repositories, from the lab's mirror.
[baseos]
name=Rocky Linux \$releasever - BaseOS
baseurl=$url/rocky/\$releasever/BaseOS/\$basearch/os/
gpgcheck=1
enabled=1
metadata_expire=0
gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-Rocky-9

[appstream]
name=Rocky Linux \$releasever - AppStream
baseurl=$url/rocky/\$releasever/AppStream/\$basearch/os/
gpgcheck=1
enabled=1
metadata_expire=0
gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-Rocky-9
EOF
  opaque "$u" /etc/pki/rpm-gpg
  # Rocky 9's dnf.conf: with Debian's, dnf skips a repository it cannot read
  # (a bad signature) and exits 0; Rocky's says skip_if_unavailable=False.
  printf '%s\n' "[main]" "gpgcheck=1" "installonly_limit=3" "clean_requirements_on_remove=True" \
    "best=True" "skip_if_unavailable=False" | layer_write "$u" /etc/dnf/dnf.conf
  layer_write "$u" /etc/pki/rpm-gpg/RPM-GPG-KEY-Rocky-9 <"$LAB_REPO/keys/rocky.asc"
  echo "%_dbpath /var/lib/rpm" | layer_write "$u" /etc/rpm/macros.gpuctl-lab
  opaque "$u" /var/lib/rpm
  opaque "$u" /var/cache/dnf
  # Debian's rpm warns "should not be used directly ... use Alien instead" on
  # every install unless given --force-debian; Rocky's rpm does not.
  if [ -x /usr/bin/rpm ]; then
    layer_dir "$u" /usr/lib/gpuctl-lab
    cp /usr/bin/rpm "$u/usr/lib/gpuctl-lab/rpm.debian" # binary: not through layer_write
    printf '#!/bin/sh\n# gpuctl-lab: Rocky'"'"'s rpm, without Debian'"'"'s "use Alien instead" warning.\nexec /usr/lib/gpuctl-lab/rpm.debian --force-debian "$@"\n' |
      layer_write "$u" /usr/bin/rpm 755
  fi
  for t in "${DEB_TOOLS[@]}"; do [ -e "$t" ] && whiteout "$u" "$t"; done
  return 0
}

# Root's home: stock dotfiles (the host's runs pyenv: +0.4 s per ssh command)
# and the lab key as the only authorized key.
disk_root_home() {
  local u=$1 pub=$2 f
  opaque "$u" /root
  for f in bashrc profile; do
    if [ -f "/usr/share/base-files/dot.$f" ]; then
      layer_write "$u" "/root/.$f" <"/usr/share/base-files/dot.$f"
    else
      layer_write "$u" "/root/.$f" <"/etc/skel/.$f"
    fi
  done
  layer_write "$u" /root/.ssh/authorized_keys 600 <"$pub"
  chmod 700 "$u/root/.ssh"
}

# sshd: the node's own ed25519 key only (the host's keys are hidden), root
# with the lab key only, room for many parallel sessions.
disk_sshd() {
  local t
  for t in /etc/ssh/ssh_host_rsa_key /etc/ssh/ssh_host_ecdsa_key; do
    [ -e "$t" ] && whiteout "$1" "$t"
    [ -e "$t.pub" ] && whiteout "$1" "$t.pub"
  done
  layer_write "$1" /etc/ssh/sshd_config.d/gpuctl-lab.conf <<'EOF'
# gpuctl-lab: this node's own key only; root with the lab key only.
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
MaxStartups 200:30:400
MaxSessions 100
EOF
}

disk_systemd() {
  local u=$1 f
  mask_units "$u"
  # The apt hook (20packagekit) pokes PackageKit when its D-Bus service file
  # exists; hidden, it stays quiet instead of printing "Unit is masked".
  f=/usr/share/dbus-1/system-services/org.freedesktop.PackageKit.service
  [ ! -e "$f" ] || whiteout "$u" "$f"
  layer_write "$u" /etc/systemd/journald.conf.d/gpuctl-lab.conf <<'EOF'
[Journal]
Storage=volatile
RuntimeMaxUse=8M
EOF
  layer_write "$u" /etc/systemd/system/gpuctl-lab-firstboot.service <<'EOF'
[Unit]
Description=gpuctl lab: first boot (package lists, base rpm)
ConditionPathExists=!/etc/gpuctl-lab/firstboot.done
DefaultDependencies=no
After=local-fs.target
Before=ssh.service multi-user.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/etc/gpuctl-lab/firstboot

[Install]
WantedBy=multi-user.target
EOF
  layer_link "$u" /etc/systemd/system/multi-user.target.wants/gpuctl-lab-firstboot.service \
    ../gpuctl-lab-firstboot.service
  layer_write "$u" /etc/gpuctl-lab/firstboot 755 <"$LAB_LIB/firstboot.sh"
  layer_dir "$u" /etc/modprobe.d
}

# The lab's names (/etc/hosts) and resolver (none: no DNS in the lab).
disk_hosts() {
  local u=$1 net name addr
  net=$(lab_net)
  {
    printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
    printf '%s.1\tgpuctl-lab-host\n' "$net"
    while IFS=$'\t' read -r name addr _; do printf '%s\t%s\n' "$addr" "$name"; done <"$LAB_TABLE"
  } | layer_write "$u" /etc/hosts
  printf '# gpuctl-lab: no DNS in the lab; node names are in /etc/hosts\noptions timeout:1 attempts:1\n' |
    layer_write "$u" /etc/resolv.conf
}

# profile.env: what the stand-ins present (GPUs, IB ports, injected faults).
profile_env() {
  local master=${LAB_MASTER_ADDR:-}
  [ -n "$master" ] || master=$(awk -F'\t' '$4 ~ /(^|,)master(,|$)/ { print $2; exit }' "$LAB_TABLE")
  printf '%s\n' \
    "# gpuctl-lab node profile, read by the stand-ins (nvidia-smi, ibstat, ...)." \
    "# Rewritten by 'gpuctl-lab up'; FAULTS edited by 'gpuctl-lab fault'." \
    "LAB_NAME=\"$LAB_NAME\"" \
    "LAB_NODE=\"$N_NAME\"" \
    "LAB_OS=\"$N_OS\"" \
    "LAB_ADDRESS=\"$N_ADDR\"" \
    "LAB_MASTER_ADDRESS=\"$master\"" \
    "GPU_MODEL=\"$N_GPU_MODEL\"" \
    "GPU_COUNT=\"${N_GPU_COUNT:-0}\"" \
    "GPU_MEMORY_MIB=\"${N_GPU_MEM:-0}\"" \
    "GPU_NVSWITCH=\"${N_NVSWITCH:-0}\"" \
    "IB_PORTS=\"$N_IB\"" \
    "FAULTS=\"$N_FAULTS\""
}

# Fills the base layer's apt lists from the lab's Ubuntu archive, once per lab
# instead of once per node: `apt-get update` on the host against the same URL
# the nodes use (the lists' file names come from it), checked with the same
# key (nginx is up: http_ensure runs first).
base_apt_lists() {
  local b=$1 tmp
  tmp=$(mktemp -d)
  mkdir -p "$tmp/parts" "$tmp/cache"
  ubuntu_sources "$LAB_REPO/keys/ubuntu.gpg" >"$tmp/parts/ubuntu.sources"
  apt-get update -qq -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$tmp/parts" \
    -o Dir::State::Lists="$b/var/lib/apt/lists" -o Dir::Cache="$tmp/cache" -o APT::Update::Error-Mode=any \
    -o APT::Sandbox::User=root -o "APT::Update::Post-Invoke-Success::=" -o "APT::Update::Post-Invoke::=" \
    >"$tmp/log" 2>&1 || warn "apt-get update for the base layer failed: $(tail -n 3 "$tmp/log")"
  rm -rf "$tmp"
}

# A node's kmod (modprobe, lsmod) and the boot unit that loads what
# modules-load.d lists: the lab's kernel has no loadable modules, so these
# simulate the ones gpuctl loads (lab/lib/kmod.py, docs/standins.md).
disk_kmod() {
  local u=$1
  layer_write "$u" /usr/lib/gpuctl-lab/kmod 755 <"$LAB_LIB/kmod.py"
  layer_link "$u" /usr/sbin/modprobe ../lib/gpuctl-lab/kmod
  layer_link "$u" /usr/sbin/lsmod ../lib/gpuctl-lab/kmod
  layer_write "$u" /etc/systemd/system/gpuctl-lab-modules-load.service <<'EOF'
[Unit]
Description=gpuctl lab: load the kernel modules modules-load.d lists (simulated ones)
DefaultDependencies=no
After=local-fs.target gpuctl-lab-nvidia-module.service openibd.service
Before=sysinit.target ssh.service sshd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/lib/gpuctl-lab/kmod --load-boot

[Install]
WantedBy=sysinit.target
EOF
  layer_link "$u" /etc/systemd/system/sysinit.target.wants/gpuctl-lab-modules-load.service \
    ../gpuctl-lab-modules-load.service
}

# state/dev: the skeleton of a node's /dev, copied into its tmpfs at boot:
# the harmless character devices, a mount point for a private devpts, links.
dev_skeleton() {
  local s=$LAB_STATE/dev d name major minor
  [ -c "$s/tty" ] && return 0
  rm -rf --one-file-system "$s"
  mkdir -p "$s/pts" "$s/shm"
  for d in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name major minor <<<"$d"
    mknod -m 666 "$s/$name" c "$major" "$minor"
  done
  ln -s pts/ptmx "$s/ptmx"
  ln -s /proc/self/fd "$s/fd"
  ln -s /proc/self/fd/0 "$s/stdin"
  ln -s /proc/self/fd/1 "$s/stdout"
  ln -s /proc/self/fd/2 "$s/stderr"
}

# Builds state/base-<os> for this lab (nodes off); kept while its inputs (node
# table, lab key, this file, layer.sh, firstboot.sh, the repository and its
# keys, the mirror's URL, the host's enabled units) are unchanged.
base_prepare() {
  local os=$1 b hash
  b=$LAB_STATE/base-$os
  hash=$(cat "$LAB_TABLE" "$LAB_STATE/ssh/id_ed25519.pub" "$LAB_LIB/disk.sh" "$LAB_LIB/layer.sh" \
    "$LAB_LIB/firstboot.sh" "$LAB_LIB/kmod.py" "$LAB_LIB"/../standins/nfs-utils/root/usr/lib/gpuctl-lab/nfs/* \
    "$LAB_REPO/.source-hash" "$LAB_REPO/keys/FINGERPRINTS" "$LAB_LIB/http.sh" \
    <(echo "$os" "$(lab_url)" /etc/systemd/system/*.wants/*) | sha256sum)
  [ -d "$b" ] && [ "$(read_file "$b.hash")" = "$hash" ] && return 0
  rm -rf --one-file-system "$b"
  mkdir -p "$b"
  disk_root_home "$b" "$LAB_STATE/ssh/id_ed25519.pub"
  disk_sshd "$b"
  disk_systemd "$b"
  disk_kmod "$b"
  disk_hosts "$b"
  case $os in
    ubuntu-*) disk_ubuntu "$b" ;;
    rocky-*) disk_rocky "$b" ;;
  esac
  layer_commit "$b"
  case $os in ubuntu-*) base_apt_lists "$b" ;; esac
  echo "$hash" >"$b.hash"
}

# Writes the node's own layer (node loaded by load_node): identity kept for
# life (host key, machine-id) and the profile rewritten by every `up`.
# Few processes per node: it runs once per node of a 100-node lab.
disk_prepare() {
  local d=$LAB_NODES_DIR/$N_NAME u id
  u=$d/upper
  if [ ! -f "$u/etc/ssh/ssh_host_ed25519_key" ]; then
    mkdir -p "$d/work" "$d/merged" "$u/etc/ssh" "$u/etc/gpuctl-lab" "$u/var/lib/dbus"
    ssh-keygen -q -t ed25519 -N '' -C "root@$N_NAME" -f "$u/etc/ssh/ssh_host_ed25519_key"
    read -r id </proc/sys/kernel/random/uuid
    id=${id//-/}
    printf '%s\n' "$id" >"$u/etc/machine-id"
    printf '%s\n' "$id" >"$u/var/lib/dbus/machine-id"
  fi
  printf '%s\n' "$N_NAME" >"$u/etc/hostname"
  profile_env >"$u/etc/gpuctl-lab/profile.env"
  users_prepare "$u" # login user with sudo, or none (users.sh)
}
