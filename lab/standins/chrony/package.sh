# chrony for the Rocky node: Debian's real chronyd and chronyc (from the same
# chrony .deb lab/mirror-debs.list mirrors for the Ubuntu nodes), laid out as
# Rocky 9 ships them: /etc/chrony.conf, /etc/sysconfig/chronyd, chronyd.service,
# user chrony. Nothing about the daemon is faked.
# Without the .deb (offline, empty cache) the package is skipped: one variant
# when it can be had, none otherwise.
pkg_variants() {
  if chrony_deb >/dev/null; then echo 4.3; else echo "chrony stand-in: skipped (no chrony .deb)" >&2; fi
}
if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=chrony
  PKG_VERSION=$PKG_VARIANT-2
  PKG_SUMMARY="chrony NTP client/server (Debian's binaries, Rocky's layout)"
  PKG_FORMATS=rpm
  PKG_ARCH=amd64
fi

# The Debian package: the repository builder's download cache, else apt.
chrony_deb() {
  local cache=${GPUCTL_REPO_CACHE:-${HOME:-/root}/.cache/gpuctl-lab/debs} f
  for f in "$cache"/chrony_4.3-*_amd64.deb; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  mkdir -p "$cache"
  (cd "$cache" && apt-get download -qq -o APT::Sandbox::User=root chrony >/dev/null 2>&1) || return 1
  for f in "$cache"/chrony_*_amd64.deb; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

pkg_stage() {
  local deb tmp
  deb=$(chrony_deb) || { echo "chrony stand-in: no chrony .deb (apt-get download chrony failed)" >&2; return 1; }
  tmp=$(mktemp -d)
  dpkg-deb -x "$deb" "$tmp"
  mkdir -p "$1/usr/libexec/gpuctl-lab" "$1/usr/bin"
  cp "$tmp/usr/sbin/chronyd" "$1/usr/libexec/gpuctl-lab/chronyd.debian"
  cp "$tmp/usr/bin/chronyc" "$1/usr/bin/chronyc"
  rm -rf "$tmp"
}
# Rocky 9's BaseOS.
PKG_REPO=rocky/BaseOS
