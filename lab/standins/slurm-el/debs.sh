# shellcheck shell=bash
# The real Debian packages the Rocky-side rpms are cut from. A lab node's files
# are the host's Debian 12, so Debian's binaries run on a Rocky-like node as
# they do on an Ubuntu-like one. The .debs come from the same cache the mirror
# step of build-repo.sh fills (GPUCTL_REPO_CACHE), at the version apt would
# install, downloaded the same way when absent.
SLURM_EL_CACHE=${GPUCTL_REPO_CACHE:-${HOME:-/root}/.cache/gpuctl-lab/debs}

# el_deb NAME: prints the cached .deb of NAME (apt's candidate version, or the
# newest cached one when apt has no lists), downloading it if needed.
el_deb() {
  local name=$1
  mkdir -p "$SLURM_EL_CACHE"
  (
    # Every variant is built in parallel: one download at a time.
    flock 9
    want=$(apt-cache policy "$name" 2>/dev/null | awk '/Candidate:/ { print $2 }')
    [ "$want" = "(none)" ] && want=
    pattern="${name}_*_amd64.deb"
    [ -n "$want" ] && pattern="${name}_${want//:/%3a}_amd64.deb"
    f=$(compgen -G "$SLURM_EL_CACHE/$pattern" | sort -V | tail -n 1)
    if [ -z "$f" ] && [ -n "$want" ]; then
      (cd "$SLURM_EL_CACHE" && apt-get download -qq -o APT::Sandbox::User=root "$name=$want") >&2
      f=$(compgen -G "$SLURM_EL_CACHE/$pattern" | tail -n 1)
    fi
    [ -n "$f" ] || {
      echo "slurm-el: no .deb of $name in $SLURM_EL_CACHE and apt cannot fetch one" >&2
      exit 1
    }
    echo "$f"
  ) 9>"$SLURM_EL_CACHE/.slurm-el.lock"
}

# el_version NAME: the Debian version of the .deb el_deb picks.
el_version() {
  local f
  f=$(el_deb "$1") || return 1
  dpkg-deb -f "$f" Version
}

# el_take DEST DEB PATH...: extracts DEB and copies PATHs (relative, globs
# allowed) into DEST, keeping their place in the tree.
el_take() {
  local dest=$1 deb=$2 tmp p
  shift 2
  tmp=$(mktemp -d)
  dpkg-deb -x "$deb" "$tmp"
  for p in "$@"; do
    (cd "$tmp" && for f in $p; do
      [ -e "$f" ] || [ -L "$f" ] || { echo "slurm-el: $f not in $deb" >&2; exit 1; }
      mkdir -p "$dest/$(dirname "$f")"
      cp -a "$f" "$dest/$(dirname "$f")/"
    done) || { rm -rf "$tmp"; return 1; }
  done
  rm -rf "$tmp"
}
