#!/usr/bin/env bash
# Builds the lab's local package repository, the one the fake nodes install from:
#   OUTDIR/deb  flat apt repository: deb [trusted=yes] file:/srv/gpuctl-repo/deb ./
#   OUTDIR/rpm  dnf repository:      baseurl=file:///srv/gpuctl-repo/rpm gpgcheck=0
# It holds stand-ins for vendor software that cannot exist here (lab/standins/*/,
# format in lab/standins/README.md) and real Debian packages mirrored the way an
# air-gapped site does (lab/mirror-debs.list).
#
# Usage: lab/build-repo.sh [--no-mirror] [--force] OUTDIR
#   --no-mirror  stand-ins only (no apt-get download; what the unit test uses)
#   --force      rebuild even when nothing changed
# Environment: GPUCTL_REPO_CACHE  where mirrored .debs are kept between builds
#              (default ~/.cache/gpuctl-lab/debs); JOBS  parallel builds (nproc).
#
# Deterministic: same sources, same bytes (fixed SOURCE_DATE_EPOCH, normalised
# owners and mtimes, no sqlite metadata). When neither the sources nor this
# script changed since OUTDIR was built, it does nothing.
set -euo pipefail

usage() { echo "usage: $0 [--no-mirror] [--force] OUTDIR" >&2; exit 2; }
mirror=1 force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-mirror) mirror=0 ;;
    --force) force=1 ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) break ;;
  esac
  shift
done
[ $# -eq 1 ] || usage

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
standins=$here/standins
mirror_list=$here/mirror-debs.list
mkdir -p "$1"
out=$(cd "$1" && pwd)
cache=${GPUCTL_REPO_CACHE:-${HOME:-/root}/.cache/gpuctl-lab/debs}
jobs=${JOBS:-$(nproc)}

# 2024-01-01T00:00:00Z: every timestamp that ends up in a package or in the
# repository metadata, so two builds of the same sources are byte-identical.
export SOURCE_DATE_EPOCH=1704067200
export LC_ALL=C TZ=UTC

for tool in dpkg-deb dpkg-scanpackages rpmbuild createrepo_c; do
  command -v "$tool" >/dev/null || {
    echo "build-repo: $tool missing (scripts/install-deps.sh lab)" >&2
    exit 1
  }
done

# --- up to date? --------------------------------------------------------------
# The stamp covers every source file's path, mode and content, the mirror list,
# this script and the mode; the host's package set is not in it (a node's base is
# the host, so a package the host gained is simply not needed any more).
stamp() {
  (
    cd "$here"
    echo "mirror=$mirror"
    { find standins build-repo.sh mirror-debs.list \( -type f -o -type l \) 2>/dev/null || true; } |
      sort | while read -r f; do
        if [ -L "$f" ]; then echo "L $f $(readlink "$f")"
        else echo "F $f $(stat -c %a "$f") $(sha256sum <"$f" | cut -c1-64)"; fi
      done
  ) | sha256sum | cut -c1-64
}
want=$(stamp)
if [ "$force" = 0 ] && [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ] &&
  [ -f "$out/deb/Packages" ] && [ -f "$out/rpm/repodata/repomd.xml" ]; then
  echo "build-repo: $out is up to date"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-repo.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf "$out/deb" "$out/rpm" "$out/.stamp"
mkdir -p "$out/deb" "$out/rpm"

# --- one package ----------------------------------------------------------------
# Directories every system already has: an rpm that listed them with %dir would
# claim them (and reset their metadata), so only the package's own are owned.
system_dirs=" / /etc /etc/systemd /etc/systemd/system /etc/modprobe.d /usr /usr/bin
  /usr/sbin /usr/lib /usr/lib64 /usr/lib/systemd /usr/lib/systemd/system
  /usr/lib/systemd/system/sysinit.target.wants /usr/lib/systemd/system/multi-user.target.wants
  /usr/lib/x86_64-linux-gnu /usr/include /usr/local /usr/local/bin /usr/local/lib
  /usr/share /usr/share/doc /var /var/lib /opt "

# "a, b (>= 1)" (deb syntax) -> "a, b >= 1" (rpm syntax).
deb_to_rpm_rel() {
  sed -E 's/\(\s*(>>|<<|>=|<=|=|>|<)\s*([^)]*)\)/\1 \2/g; s/>>/>/g; s/<</</g' <<<"$1"
}

# Maintainer script as dpkg wants it: the author's script with the package's
# identity assigned right after the shebang.
script_with_vars() { # file
  sed -n '1p' "$1"
  printf 'PKG_NAME=%s\nPKG_VERSION=%s\nPKG_VARIANT=%s\n' "$PKG_NAME" "$PKG_VERSION" "$PKG_VARIANT"
  sed '1d' "$1"
}

build_deb() { # stage
  local stage=$1 file="$out/deb/${PKG_NAME}_${PKG_VERSION}_${deb_arch}.deb"
  mkdir -p "$stage/DEBIAN"
  {
    echo "Package: $PKG_NAME"
    echo "Version: $PKG_VERSION"
    echo "Architecture: $deb_arch"
    echo "Maintainer: gpuctl lab <lab@gpuctl.invalid>"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
    [ -n "${PKG_DEB_DEPENDS:-}" ] && echo "Depends: $PKG_DEB_DEPENDS"
    [ -n "${PKG_PROVIDES:-}" ] && echo "Provides: $PKG_PROVIDES"
    [ -n "${PKG_CONFLICTS:-}" ] && echo "Conflicts: $PKG_CONFLICTS"
    echo "Section: misc"
    echo "Priority: optional"
    echo "Description: $PKG_SUMMARY"
    echo " gpuctl lab stand-in, not the vendor's software (docs/standins.md)."
  } >"$stage/DEBIAN/control"
  local s
  for s in postinst prerm; do
    if [ -f "$dir/$s" ]; then
      script_with_vars "$dir/$s" >"$stage/DEBIAN/$s"
      chmod 0755 "$stage/DEBIAN/$s"
    fi
  done
  touch -h -d "@$SOURCE_DATE_EPOCH" "$stage/DEBIAN" "$stage/DEBIAN"/*
  dpkg-deb --root-owner-group -Zgzip --build "$stage" "$file" >/dev/null
  rm -rf "$stage/DEBIAN"
  echo "  deb  $(basename "$file")"
}

# rpm scriptlet body: rpmbuild expands %, so double it; the script gets the
# Debian arguments (configure / remove / upgrade) so one file serves both.
rpm_scriptlet() { # file first-line-of-body
  echo "$2"
  printf 'PKG_NAME=%s\nPKG_VERSION=%s\nPKG_VARIANT=%s\n' "${PKG_RPM_NAME:-$PKG_NAME}" "$PKG_VERSION" \
    "$PKG_VARIANT"
  sed '1d; s/%/%%/g' "$1"
}

build_rpm() { # stage
  local stage=$1 name=${PKG_RPM_NAME:-$PKG_NAME}
  # rpm has no '-' in Version: "2.23.4-1+cuda12.6" -> 2.23.4 / 1+cuda12.6.
  local version=${PKG_VERSION%-*} release=1
  [ "$version" != "$PKG_VERSION" ] && release=${PKG_VERSION##*-}
  local spec=$work/$name-$version-$release.spec top=$work/rpmbuild-$name-$version-$release
  local owned_elsewhere
  owned_elsewhere=" $(echo $system_dirs) "
  {
    echo "Name: $name"
    echo "Version: $version"
    echo "Release: $release"
    echo "Summary: $PKG_SUMMARY"
    echo "License: gpuctl lab stand-in"
    echo "BuildArch: $rpm_arch"
    echo "AutoReqProv: no"
    [ -n "${PKG_RPM_REQUIRES:-}" ] && echo "Requires: $PKG_RPM_REQUIRES"
    [ -n "${PKG_PROVIDES:-}" ] && echo "Provides: $(deb_to_rpm_rel "$PKG_PROVIDES")"
    [ -n "${PKG_CONFLICTS:-}" ] && echo "Conflicts: $(deb_to_rpm_rel "$PKG_CONFLICTS")"
    echo "%description"
    echo "$PKG_SUMMARY. gpuctl lab stand-in, not the vendor's software."
    echo "%install"
    echo "mkdir -p %{buildroot} && cp -a '$stage/.' %{buildroot}/"
    [ -f "$dir/postinst" ] && rpm_scriptlet "$dir/postinst" $'%post\nset -- configure'
    [ -f "$dir/prerm" ] &&
      rpm_scriptlet "$dir/prerm" $'%preun\nif [ "$1" -eq 0 ]; then set -- remove; else set -- upgrade; fi'
    echo "%files"
    echo "%defattr(-,root,root,-)"
    (cd "$stage" && find . -mindepth 1 | sort | cut -c2-) | while read -r p; do
      if [ -d "$stage$p" ] && [ ! -L "$stage$p" ]; then
        case "$owned_elsewhere" in *" $p "*) ;; *) echo "%dir \"$p\"" ;; esac
      else
        echo "\"$p\""
      fi
    done
  } >"$spec"
  rpmbuild -bb --quiet "$spec" \
    --define "_topdir $top" --define "_rpmdir $out/rpm" \
    --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
    --define "_buildhost gpuctl-lab" \
    --define "use_source_date_epoch_as_buildtime 1" \
    --define "clamp_mtime_to_source_epoch 1" \
    --define "source_date_epoch_from_changelog 0" \
    --define "__os_install_post %{nil}" --define "debug_package %{nil}" \
    --define "_binary_payload w6.gzdio" >"$work/$name-$version.log" 2>&1 || {
    cat "$work/$name-$version.log" >&2
    return 1
  }
  echo "  rpm  $name-$version-$release.$rpm_arch.rpm"
}

# Builds one (directory, variant): a subshell, so one package.sh's variables
# never leak into the next.
build_one() ( # dir variant
  set -euo pipefail
  dir=$1
  unset PKG_NAME PKG_VERSION PKG_SUMMARY PKG_DEB_DEPENDS PKG_RPM_REQUIRES PKG_PROVIDES \
    PKG_CONFLICTS PKG_RPM_NAME PKG_FORMATS PKG_ARCH
  unset -f pkg_variants pkg_stage
  PKG_VARIANT=$2 PKG_DIR=$dir
  # shellcheck source=/dev/null
  source "$dir/package.sh"
  local v
  # Relation lists may span lines in package.sh; control files want one line.
  for v in PKG_DEB_DEPENDS PKG_RPM_REQUIRES PKG_PROVIDES PKG_CONFLICTS; do
    printf -v "$v" '%s' "$(tr -s ' \t\n' ' ' <<<"${!v:-}" | sed 's/^ //; s/ $//')"
  done
  for v in PKG_NAME PKG_VERSION PKG_SUMMARY; do
    [ -n "${!v:-}" ] || { echo "build-repo: $dir: $v not set (variant '$PKG_VARIANT')" >&2; exit 1; }
  done
  deb_arch=${PKG_ARCH:-all}
  rpm_arch=noarch
  [ "$deb_arch" = amd64 ] && rpm_arch=x86_64
  local stage
  stage=$(mktemp -d "$work/stage.XXXXXX")
  chmod 0755 "$stage"
  [ -d "$dir/root" ] && cp -a "$dir/root/." "$stage/"
  if declare -F pkg_stage >/dev/null; then pkg_stage "$stage"; fi
  # Owners come from the builders (root); modes are the tree's minus group and
  # other write; every mtime is the fixed epoch.
  chmod -R go-w "$stage"
  find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  local f
  for f in ${PKG_FORMATS:-deb rpm}; do
    case "$f" in
      deb) build_deb "$stage" ;;
      rpm) build_rpm "$stage" ;;
      *) echo "build-repo: $dir: unknown format '$f'" >&2; exit 1 ;;
    esac
  done
)

# Lists "DIR VARIANT" for every package to build ("-" for no variant).
list_builds() {
  local d
  for d in "$standins"/*/; do
    d=${d%/}
    [ -f "$d/package.sh" ] || continue
    (
      unset -f pkg_variants
      # shellcheck disable=SC2034 # read by the package.sh sourced below
      PKG_VARIANT='' PKG_DIR=$d
      # shellcheck source=/dev/null
      source "$d/package.sh"
      if declare -F pkg_variants >/dev/null; then
        pkg_variants | while read -r v; do [ -n "$v" ] && echo "$d $v"; done
      else
        echo "$d -"
      fi
    )
  done
}

echo "build-repo: stand-ins from $standins"
export -f build_one build_deb build_rpm rpm_scriptlet script_with_vars deb_to_rpm_rel
export work out system_dirs
list_builds >"$work/builds"
# Parallel, one package per job; the sort keeps the printed list stable.
xargs -P "$jobs" -L 1 bash -c 'v=$2; [ "$v" = - ] && v=; build_one "$1" "$v"' _ \
  <"$work/builds" >"$work/built" || { cat "$work/built"; exit 1; }
sort "$work/built"
echo "build-repo: $(grep -c . "$work/builds") stand-in packages"

# --- real Debian packages -----------------------------------------------------
# A node's base is the host's / (overlay), so what a node lacks for a package is
# exactly what `apt-get install -s` on the host says it would install.
if [ "$mirror" = 1 ] && [ -f "$mirror_list" ]; then
  mapfile -t wanted < <(sed 's/#.*//' "$mirror_list" | tr -s ' \t' '\n' | grep .)
  if [ ${#wanted[@]} -gt 0 ]; then
    echo "build-repo: mirroring ${wanted[*]} (and what they need beyond the host)"
    mkdir -p "$cache"
    apt-get install -s -qq --no-install-recommends "${wanted[@]}" >"$work/sim" || {
      echo "build-repo: apt-get cannot resolve lab/mirror-debs.list (apt-get update?)" >&2
      exit 1
    }
    # "Inst slurmd (22.05.8-4+deb12u3 Debian:12.12/stable [amd64])" -> slurmd=22.05.8-4+deb12u3
    sed -nE 's/^Inst ([^ ]+) (\[[^]]*\] )?\(([^ ]+) .*/\1=\3/p' "$work/sim" | sort >"$work/pins"
    fetch=()
    while IFS='=' read -r p v; do
      compgen -G "$cache/${p}_${v//:/%3a}_*.deb" >/dev/null || fetch+=("$p=$v")
    done <"$work/pins"
    if [ ${#fetch[@]} -gt 0 ]; then
      (cd "$cache" && apt-get download -qq -o APT::Sandbox::User=root "${fetch[@]}")
    fi
    while IFS='=' read -r p v; do
      cp "$cache/${p}_${v//:/%3a}_"*.deb "$out/deb/"
      echo "  deb  ${p}_${v} (mirrored)"
    done <"$work/pins"
  fi
fi

# --- metadata -------------------------------------------------------------------
(
  cd "$out/deb"
  dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages
  gzip -9nc Packages >Packages.gz
  # A Release file spares apt its "no Release file" warning; [trusted=yes]
  # still skips signatures.
  {
    echo "Origin: gpuctl-lab"
    echo "Label: gpuctl-lab"
    echo "Date: $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
    echo "SHA256:"
    for f in Packages Packages.gz; do
      printf ' %s %s %s\n' "$(sha256sum <"$f" | cut -c1-64)" "$(stat -c %s "$f")" "$f"
    done
  } >Release
)
# createrepo_c records each file's mtime: pin it too.
touch -d "@$SOURCE_DATE_EPOCH" "$out"/rpm/*.rpm
createrepo_c --quiet --no-database --revision "$SOURCE_DATE_EPOCH" --set-timestamp-to-revision \
  "$out/rpm" >/dev/null
echo "$want" >"$out/.stamp"
debs=("$out"/deb/*.deb) rpms=("$out"/rpm/*.rpm)
echo "build-repo: $out/deb (${#debs[@]} debs), $out/rpm (${#rpms[@]} rpms)"
