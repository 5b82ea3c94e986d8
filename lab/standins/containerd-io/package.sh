# containerd.io: the name Docker's repositories give containerd, carrying the
# REAL containerd and runc binaries of the Debian packages the lab mirrors
# (lab/mirror-debs.list), so a node running it runs the same real daemon as
# one with the distribution's containerd. Docker's containerd.io bundles
# runc, so this one does too; on apt it conflicts with and replaces Ubuntu's
# containerd and runc, as Docker's does, and docker-ce depends on it there
# (so a node with Docker cannot keep Ubuntu's containerd). Repackaging, not a
# fake: see docs/standins.md.
#
# The variant is the host's apt candidate of containerd. Its .deb (and runc's)
# are taken from the mirror cache build-repo.sh uses (GPUCTL_REPO_CACHE), and
# downloaded there when missing; with neither cache nor network there is no
# variant and no containerd.io package (said on stderr).
deb_cache=${GPUCTL_REPO_CACHE:-${HOME:-/root}/.cache/gpuctl-lab/debs}

candidate() { # package -> apt candidate version
  apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)'
}

cached_deb() { # package version -> path of the .deb in the cache, fetched if needed
  local f
  f=$(compgen -G "$deb_cache/${1}_${2//:/%3a}_*.deb" | head -n 1) || true
  if [ -z "$f" ]; then
    mkdir -p "$deb_cache"
    (cd "$deb_cache" && apt-get download -qq -o APT::Sandbox::User=root "$1=$2") >/dev/null 2>&1 ||
      return 1
    f=$(compgen -G "$deb_cache/${1}_${2//:/%3a}_*.deb" | head -n 1) || return 1
  fi
  echo "$f"
}

pkg_variants() {
  local c r
  c=$(candidate containerd) && r=$(candidate runc) &&
    cached_deb containerd "$c" >/dev/null && cached_deb runc "$r" >/dev/null && {
    echo "$c"
    return 0
  }
  echo "containerd-io: no containerd/runc .deb in $deb_cache and none downloadable;" \
    "no containerd.io package" >&2
}

if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=containerd.io
  PKG_VERSION=$PKG_VARIANT
  PKG_SUMMARY="containerd $PKG_VARIANT and runc, real Debian binaries repackaged as Docker's containerd.io"
  PKG_ARCH=amd64
  PKG_PROVIDES="containerd, runc"
  PKG_DEB_CONFLICTS="containerd, runc"
  PKG_DEB_REPLACES="containerd, runc"
  PKG_DEB_CONFFILES=/etc/containerd/config.toml
fi

pkg_stage() {
  local x
  x=$(mktemp -d)
  dpkg-deb -x "$(cached_deb containerd "$PKG_VARIANT")" "$x"
  dpkg-deb -x "$(cached_deb runc "$(candidate runc)")" "$x"
  mkdir -p "$1/usr/bin" "$1/usr/lib/systemd/system" "$1/etc/containerd"
  cp -a "$x"/usr/bin/containerd "$x"/usr/bin/containerd-shim* "$x"/usr/bin/ctr "$1/usr/bin/"
  cp "$x"/usr/sbin/runc "$1/usr/bin/runc" # Docker's package has it in /usr/bin
  cp "$x"/lib/systemd/system/containerd.service "$1/usr/lib/systemd/system/"
  # Docker's containerd.io ships a config that disables the CRI plugin (Docker
  # does not need it); Kubernetes installers must replace or fix it.
  cp "$PKG_DIR/config.toml" "$1/etc/containerd/config.toml"
  rm -rf "$x"
}
# Docker's repositories (Rocky's own archive has no containerd).
PKG_REPO=docker
