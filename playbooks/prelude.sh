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

# gpuctl_block FILE: the lines of gpuctl's block in FILE, between "# BEGIN
# gpuctl" and "# END gpuctl" (markers excluded); empty without one. Fails
# (status 2) when the markers do not pair up.
gpuctl_block() {
  [ "$(grep -c '^# BEGIN gpuctl$' "$1" 2>/dev/null)" = "$(grep -c '^# END gpuctl$' "$1" 2>/dev/null)" ] ||
    return 2
  sed -n '/^# BEGIN gpuctl$/,/^# END gpuctl$/{/^# BEGIN gpuctl$/d;/^# END gpuctl$/d;p;}' "$1" 2>/dev/null || true
}

# set_gpuctl_block FILE CONTENT: replaces gpuctl's block in FILE (the first
# one; later duplicates are dropped) or appends it; every other line is kept.
set_gpuctl_block() {
  if ! gpuctl_block "$1" >/dev/null; then
    echo "gpuctl: $1 has unmatched '# BEGIN gpuctl' / '# END gpuctl' lines; fix them by hand" >&2
    return 1
  fi
  [ -f "$1" ] || : >"$1"
  # ENVIRON, not awk -v, which would expand backslashes.
  GPUCTL_BLOCK="# BEGIN gpuctl
$2
# END gpuctl" awk '
    /^# BEGIN gpuctl$/ { if (!done) print ENVIRON["GPUCTL_BLOCK"]; done = 1; skip = 1; next }
    skip && /^# END gpuctl$/ { skip = 0; next }
    !skip { print }
    END { if (!done) print ENVIRON["GPUCTL_BLOCK"] }
  ' "$1" >"$1.gpuctl-tmp.$$"
  chmod "$(stat -c %a "$1")" "$1.gpuctl-tmp.$$"
  mv -f "$1.gpuctl-tmp.$$" "$1"
  if command -v restorecon >/dev/null 2>&1; then restorecon "$1" || true; fi
}
