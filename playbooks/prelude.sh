# gpuctl prelude: prepended to every probe, change and verify script.
# POSIX sh. GPUCTL_OS_FAMILY (debian|rhel) is always set by gpuctl.
# Keep functions small: each is part of every script's digest.

# pkg_installed NAME: true when the package is installed.
pkg_installed() {
  case "$GPUCTL_OS_FAMILY" in
    debian) dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' ;;
    rhel) rpm -q --quiet "$1" 2>/dev/null ;;
    *) echo "gpuctl: unknown OS family '$GPUCTL_OS_FAMILY'" >&2; return 2 ;;
  esac
}

# pkg_version NAME: the installed version, empty if not installed.
pkg_version() {
  case "$GPUCTL_OS_FAMILY" in
    debian) dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true ;;
    rhel) rpm -q --qf '%{VERSION}-%{RELEASE}' "$1" 2>/dev/null || true ;;
  esac
}

# pkg_install NAME...: install from the node's configured repositories. The
# package lists are refreshed only when the first try cannot find a package,
# so a converged node never pays for `apt-get update`.
pkg_install() {
  case "$GPUCTL_OS_FAMILY" in
    debian)
      export DEBIAN_FRONTEND=noninteractive
      # Finish a dpkg run that was cut off (a lost connection, a reboot), and
      # wait for another apt (unattended-upgrades) rather than fail on its lock.
      dpkg --configure -a
      set -- -y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confold install "$@"
      apt-get "$@" || { apt-get update -q -o DPkg::Lock::Timeout=300 && apt-get "$@"; }
      ;;
    rhel) dnf -y -q install "$@" ;;
  esac
}

# file_is PATH CONTENT: true when PATH holds exactly CONTENT (plus newline).
file_is() {
  [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]
}

# write_file PATH CONTENT [MODE]: atomically replace PATH with CONTENT.
write_file() {
  mkdir -p "$(dirname "$1")"
  tmp="$1.gpuctl-tmp.$$"
  printf '%s\n' "$2" >"$tmp"
  chmod "${3:-0644}" "$tmp"
  mv -f "$tmp" "$1"
}

# unit_started_after UNIT FILE...: true when UNIT is active and entered that
# state no earlier than each FILE was last written, so it runs with the
# FILEs' current content (daemons read their key or config only at start).
unit_started_after() {
  _u=$1
  shift
  systemctl is-active --quiet "$_u" || return 1
  _since=$(date -d "$(systemctl show -p ActiveEnterTimestamp --value "$_u")" +%s 2>/dev/null) || return 1
  for _f in "$@"; do
    [ "$(stat -c %Y "$_f" 2>/dev/null || echo 0)" -le "$_since" ] || return 1
  done
}
