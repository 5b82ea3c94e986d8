#!/usr/bin/env bash
# Builds the lab's package repositories, the tree the lab's web server (nginx,
# lab/lib/http.sh) serves to the nodes at http://<lab-net>.1:8642/. Laid out as
# the real sources are, each signed by a lab GPG key of its own:
#   OUTDIR/ubuntu/    Ubuntu 22.04's archive (dists/jammy: main restricted universe)
#   OUTDIR/rocky/9/{BaseOS,AppStream}/x86_64/os/    Rocky 9's archive
#   OUTDIR/<vendor>/  cuda, container-toolkit, kubernetes, docker, ofed, epel,
#                     helm: the vendors' own layouts below their base URL
#                     (docs/standins.md lists the paths)
#   OUTDIR/wrongkey/  container-toolkit's content with metadata signed by the
#                     "wrongkey" key instead of container-toolkit's (tests)
#   OUTDIR/keys/<repo>.asc (+ ubuntu.gpg, FINGERPRINTS)   the public keys
#   OUTDIR/mirror/    non-package artefacts (lab/mirror/build-mirror.sh)
#   OUTDIR/.gnupg     the private keys (never served)
# apt repositories have InRelease and Release.gpg; dnf repositories
# repodata/repomd.xml.asc, and every rpm is signed with rpmsign.
# Stand-ins for vendor software that cannot exist here (lab/standins/*/, format
# and the PKG_REPO field in lab/standins/README.md) go where their package.sh
# says; real Debian packages mirrored the way an air-gapped site does
# (lab/mirror-debs.list) go to the Ubuntu archive.
#
# Usage: lab/build-repo.sh [--no-mirror] [--force] OUTDIR
#   --no-mirror  stand-ins only (no apt-get download; what the unit test uses)
#   --force      rebuild even when nothing changed
# Environment: GPUCTL_REPO_CACHE  where mirrored .debs are kept between builds
#              (default ~/.cache/gpuctl-lab/debs); JOBS  parallel builds (nproc).
#
# Keys are made on the first build of OUTDIR (gpg batch, no passphrase, in
# OUTDIR/.gnupg) and kept by later builds, so nodes and inventories that
# trust them stay valid. Otherwise deterministic: same sources, same package
# bytes and unsigned metadata (fixed SOURCE_DATE_EPOCH, normalised owners and
# mtimes, no sqlite metadata); only signatures carry the time of the build.
# When neither the sources nor this script changed since OUTDIR was built, it
# does nothing.
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
# The repositories (top-level directories of OUTDIR), each with its own key.
REPOS="ubuntu rocky cuda container-toolkit kubernetes docker ofed epel helm"
mkdir -p "$1"
out=$(cd "$1" && pwd)
cache=${GPUCTL_REPO_CACHE:-${HOME:-/root}/.cache/gpuctl-lab/debs}
jobs=${JOBS:-$(nproc)}

# 2024-01-01T00:00:00Z: every timestamp that ends up in a package or in the
# repository metadata, so two builds of the same sources are byte-identical.
export SOURCE_DATE_EPOCH=1704067200
export LC_ALL=C TZ=UTC

for tool in dpkg-deb dpkg-scanpackages rpmbuild createrepo_c gpg rpmsign; do
  command -v "$tool" >/dev/null || {
    echo "build-repo: $tool missing (scripts/install-deps.sh lab)" >&2
    exit 1
  }
done

# --- up to date? --------------------------------------------------------------
# The stamp covers every source file's path, mode and content, the mirror list,
# this script, the mode and the running kernel; the host's package set is not in it (a node's base is
# the host, so a package the host gained is simply not needed any more).
stamp() {
  (
    cd "$here"
    echo "mirror=$mirror"
    # The running kernel's headers packages are named after it.
    echo "kernel=$(uname -r)"
    # Not Python's bytecode: the unit tests run the stand-ins from this tree,
    # and the caches they leave would make every test run rebuild it all.
    { find standins mirror build-repo.sh mirror-debs.list -name __pycache__ -prune -o \
      \( -type f -o -type l \) -print 2>/dev/null || true; } |
      sort | while read -r f; do
        if [ -L "$f" ]; then echo "L $f $(readlink "$f")"
        else echo "F $f $(stat -c %a "$f") $(sha256sum <"$f" | cut -c1-64)"; fi
      done
  ) | sha256sum | cut -c1-64
}
want=$(stamp)
if [ "$force" = 0 ] && [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ] &&
  [ -f "$out/ubuntu/dists/jammy/InRelease" ] &&
  [ -f "$out/rocky/9/BaseOS/x86_64/os/repodata/repomd.xml.asc" ]; then
  echo "build-repo: $out is up to date"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-repo.XXXXXX")
export GNUPGHOME=$out/.gnupg
# gpg starts an agent for the keys; it must not outlive the build.
trap 'gpgconf --kill gpg-agent 2>/dev/null; rm -rf "$work"' EXIT
# Every repository is rebuilt from scratch (the served root stays the same
# directory); the keys in .gnupg are kept. deb/ and rpm/ are the old layout.
rm -rf "$out/.stamp" "$out/deb" "$out/rpm" "$out/keys" "$out/mirror" "$out/wrongkey"
for r in $REPOS; do rm -rf "${out:?}/$r"; done

# --- where each repository's packages go ----------------------------------------
# A package.sh names its repository as NAME or NAME/PART (lab/standins/README.md):
# PART is Ubuntu's component, Rocky's repository, Kubernetes' minor (v1.30) or
# OFED's release series (24.01). These are the paths below each repository's
# base URL that the real ones use (the inventory's `url` is OUTDIR/NAME's URL).
deb_dir() { # spec -> directory below OUTDIR for the .deb, or fails
  local name=${1%%/*} part=""
  [[ $1 == */* ]] && part=${1#*/}
  case $name/$part in
    ubuntu/ | ubuntu/main | ubuntu/restricted | ubuntu/universe) echo "ubuntu/pool/${part:-main}" ;;
    cuda/) echo cuda/ubuntu2204/x86_64 ;;
    container-toolkit/) echo container-toolkit/stable/deb/amd64 ;;
    kubernetes/v1.[0-9]*) echo "kubernetes/$part/deb" ;;
    docker/) echo docker/ubuntu/pool/stable ;;
    ofed/[0-9]*.[0-9]*) echo "ofed/latest-$part/ubuntu22.04/amd64" ;;
    helm/) echo helm/any/pool/main ;;
    *) return 1 ;;
  esac
}
rpm_dir() { # spec -> repository root below OUTDIR (rpms go to its Packages/), or fails
  local name=${1%%/*} part=""
  [[ $1 == */* ]] && part=${1#*/}
  case $name/$part in
    rocky/ | rocky/BaseOS | rocky/AppStream) echo "rocky/9/${part:-BaseOS}/x86_64/os" ;;
    cuda/) echo cuda/rhel9/x86_64 ;;
    container-toolkit/) echo container-toolkit/stable/rpm/x86_64 ;;
    kubernetes/v1.[0-9]*) echo "kubernetes/$part/rpm" ;;
    docker/) echo docker/centos/9/x86_64/stable ;;
    ofed/[0-9]*.[0-9]*) echo "ofed/latest-$part/rhel9.4/x86_64" ;;
    epel/) echo epel/9/Everything/x86_64 ;;
    *) return 1 ;;
  esac
}

# --- one package ----------------------------------------------------------------
# Directories every system already has: an rpm that listed them with %dir would
# claim them (and reset their metadata), so only the package's own are owned.
system_dirs=" / /etc /etc/systemd /etc/systemd/system /etc/modprobe.d /usr /usr/bin
  /usr/sbin /usr/lib /usr/lib64 /usr/lib/systemd /usr/lib/systemd/system
  /usr/lib/systemd/system/sysinit.target.wants /usr/lib/systemd/system/multi-user.target.wants
  /usr/lib/x86_64-linux-gnu /usr/include /usr/local /usr/local/bin /usr/local/lib
  /usr/share /usr/share/doc /var /var/lib /opt /boot /lib /lib/modules /usr/src /usr/lib/kernel
  /usr/lib/kernel/install.d "

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

build_deb() { # stage repo-spec
  local stage=$1 dest
  dest=$(deb_dir "$2") || { echo "build-repo: $dir: no apt repository '$2' (PKG_REPO)" >&2; return 1; }
  mkdir -p "$out/$dest"
  local file="$out/$dest/${PKG_NAME}_${PKG_VERSION}_${deb_arch}.deb"
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
    # apt only: Debian ignores a conflict with what the package provides itself.
    [ -n "${PKG_DEB_CONFLICTS:-}" ] && echo "Conflicts: $PKG_DEB_CONFLICTS"
    [ -n "${PKG_DEB_REPLACES:-}" ] && echo "Replaces: $PKG_DEB_REPLACES"
    echo "Section: misc"
    echo "Priority: optional"
    echo "Description: $PKG_SUMMARY"
    echo " gpuctl lab stand-in, not the vendor's software (docs/standins.md)."
  } >"$stage/DEBIAN/control"
  # Files under /etc that dpkg keeps as the admin left them (what debhelper
  # marks for real packages): one path a line.
  if [ -n "${PKG_DEB_CONFFILES:-}" ]; then
    tr -s ' ' '\n' <<<"$PKG_DEB_CONFFILES" >"$stage/DEBIAN/conffiles"
  fi
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
  echo "  deb  $2: $(basename "$file")"
}

# rpm scriptlet body: rpmbuild expands %, so double it; the script gets the
# Debian arguments (configure / remove / upgrade) so one file serves both.
rpm_scriptlet() { # file first-line-of-body
  echo "$2"
  printf 'PKG_NAME=%s\nPKG_VERSION=%s\nPKG_VARIANT=%s\n' "${PKG_RPM_NAME:-$PKG_NAME}" "$PKG_VERSION" \
    "$PKG_VARIANT"
  sed '1d; s/%/%%/g' "$1"
}

build_rpm() { # stage repo-spec
  local stage=$1 name=${PKG_RPM_NAME:-$PKG_NAME} dest
  dest=$(rpm_dir "$2") || { echo "build-repo: $dir: no dnf repository '$2' (PKG_REPO)" >&2; return 1; }
  mkdir -p "$out/$dest/Packages"
  # rpm has no '-' in Version: "2.23.4-1+cuda12.6" -> 2.23.4 / 1+cuda12.6;
  # PKG_VERSION_RPM, when the rpm's differs, may lead with an epoch ("3:").
  local evr=${PKG_VERSION_RPM:-$PKG_VERSION} epoch=
  case "$evr" in *:*) epoch=${evr%%:*} evr=${evr#*:} ;; esac
  local version=${evr%-*} release=1
  [ "$version" != "$evr" ] && release=${evr##*-}
  local spec=$work/$name-$version-$release.spec top=$work/rpmbuild-$name-$version-$release
  local owned_elsewhere
  # shellcheck disable=SC2086,SC2116 # the list on one line, a blank each side
  owned_elsewhere=" $(echo $system_dirs) ${PKG_RPM_UNOWNED_DIRS:-} "
  {
    echo "Name: $name"
    [ -n "$epoch" ] && echo "Epoch: $epoch"
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
    --define "_topdir $top" --define "_rpmdir $out/$dest/Packages" \
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
  echo "  rpm  $2: $name-$version-$release.$rpm_arch.rpm"
}

# Builds one (directory, variant): a subshell, so one package.sh's variables
# never leak into the next.
build_one() ( # dir variant
  set -euo pipefail
  dir=$1
  unset PKG_NAME PKG_VERSION PKG_VERSION_RPM PKG_SUMMARY PKG_DEB_DEPENDS PKG_RPM_REQUIRES PKG_PROVIDES \
    PKG_CONFLICTS PKG_DEB_CONFLICTS PKG_DEB_REPLACES PKG_DEB_CONFFILES PKG_RPM_NAME PKG_RPM_UNOWNED_DIRS PKG_FORMATS PKG_ARCH PKG_REPO \
    PKG_REPO_DEB PKG_REPO_RPM
  unset -f pkg_variants pkg_stage
  PKG_VARIANT=$2 PKG_DIR=$dir
  # shellcheck source=/dev/null
  source "$dir/package.sh"
  local v
  # Relation lists may span lines in package.sh; control files want one line.
  for v in PKG_DEB_DEPENDS PKG_RPM_REQUIRES PKG_PROVIDES PKG_CONFLICTS PKG_DEB_CONFLICTS PKG_DEB_REPLACES; do
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
  # Bytecode a test run left in the tree is no part of a package.
  find "$stage" -name __pycache__ -prune -exec rm -rf {} +
  if declare -F pkg_stage >/dev/null; then pkg_stage "$stage"; fi
  # Owners come from the builders (root); modes are the tree's minus group and
  # other write; every mtime is the fixed epoch.
  chmod -R go-w "$stage"
  find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  local f
  for f in ${PKG_FORMATS:-deb rpm}; do
    case "$f" in
      deb) build_deb "$stage" "${PKG_REPO_DEB:-${PKG_REPO:-}}" ;;
      rpm) build_rpm "$stage" "${PKG_REPO_RPM:-${PKG_REPO:-}}" ;;
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
export -f build_one build_deb build_rpm rpm_scriptlet script_with_vars deb_to_rpm_rel deb_dir rpm_dir
export work out system_dirs
list_builds >"$work/builds"
# Parallel, one package per job; the sort keeps the printed list stable.
# shellcheck disable=SC2016 # the inner bash expands its own $1 and $2
xargs -P "$jobs" -L 1 bash -c 'v=$2; [ "$v" = - ] && v=; build_one "$1" "$v"' _ \
  <"$work/builds" >"$work/built" || { cat "$work/built"; exit 1; }
sort "$work/built"
echo "build-repo: $(grep -c . "$work/builds") stand-in packages"

# --- real Debian packages -----------------------------------------------------
# A node's base is the host's / (overlay), so what a node lacks for a package is
# exactly what `apt-get install -s` on the host says it would install.
if [ "$mirror" = 1 ] && [ -f "$mirror_list" ]; then
  # "universe: munge slurm-wlm" puts those in Ubuntu's universe; what they
  # pull in beyond the host, and lines without a component, go to main.
  # "host: NAME" mirrors the host's own installed version of a package the
  # node already has (to main): what a package gpuctl installs takes away,
  # which no simulated install can list.
  declare -A component=()
  host_pkgs=()
  while read -r line; do
    c=main
    if [[ $line =~ ^host:(.*)$ ]]; then
      read -ra names <<<"${BASH_REMATCH[1]}"
      host_pkgs+=("${names[@]}")
      continue
    fi
    if [[ $line =~ ^(main|restricted|universe):(.*)$ ]]; then c=${BASH_REMATCH[1]} line=${BASH_REMATCH[2]}; fi
    for p in $line; do component[$p]=$c; done
  done < <(sed 's/#.*//' "$mirror_list")
  mapfile -t wanted < <(printf '%s\n' "${!component[@]}" | sort)
  if [ ${#wanted[@]} -gt 0 ]; then
    echo "build-repo: mirroring ${wanted[*]} (and what they need beyond the host)"
    mkdir -p "$cache"
    apt-get install -s -qq --no-install-recommends "${wanted[@]}" >"$work/sim" || {
      echo "build-repo: apt-get cannot resolve lab/mirror-debs.list (apt-get update?)" >&2
      exit 1
    }
    # "Inst slurmd (22.05.8-4+deb12u3 Debian:12.12/stable [amd64])" -> slurmd=22.05.8-4+deb12u3
    sed -nE 's/^Inst ([^ ]+) (\[[^]]*\] )?\(([^ ]+) .*/\1=\3/p' "$work/sim" | sort >"$work/pins"
    for p in "${host_pkgs[@]}"; do
      v=$(dpkg-query -W -f='${Version}' "$p") || { echo "build-repo: host: $p is not installed here" >&2; exit 1; }
      echo "$p=$v" >>"$work/pins"
    done
    fetch=()
    while IFS='=' read -r p v; do
      compgen -G "$cache/${p}_${v//:/%3a}_*.deb" >/dev/null || fetch+=("$p=$v")
    done <"$work/pins"
    if [ ${#fetch[@]} -gt 0 ]; then
      (cd "$cache" && apt-get download -qq -o APT::Sandbox::User=root "${fetch[@]}")
    fi
    while IFS='=' read -r p v; do
      c=${component[$p]:-main}
      mkdir -p "$out/ubuntu/pool/$c"
      cp "$cache/${p}_${v//:/%3a}_"*.deb "$out/ubuntu/pool/$c/"
      echo "  deb  ubuntu/$c: ${p}_${v} (mirrored)"
    done <"$work/pins"
  fi
fi

# --- keys -----------------------------------------------------------------------
# One signing key per repository (and "wrongkey", a key no repository is
# published with), RSA 3072 like most vendors', no passphrase, kept in
# OUTDIR/.gnupg across builds. key_fpr prints a key's fingerprint.
key_email() { echo "$1@repo.gpuctl-lab.invalid"; }
key_fpr() {
  gpg --batch --with-colons --list-secret-keys "<$(key_email "$1")>" 2>/dev/null |
    awk -F: '$1 == "fpr" { print $10; exit }'
}
mkdir -p "$GNUPGHOME" "$out/keys"
chmod 700 "$GNUPGHOME"
for k in $REPOS wrongkey; do
  if [ -z "$(key_fpr "$k")" ]; then
    gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
      --quick-generate-key "gpuctl lab $k repository <$(key_email "$k")>" rsa3072 sign never 2>/dev/null
    echo "  key  $k: new $(key_fpr "$k")"
  fi
  gpg --batch --armor --export "$(key_fpr "$k")" >"$out/keys/$k.asc"
  printf '%s %s\n' "$k" "$(key_fpr "$k")" >>"$out/keys/FINGERPRINTS"
done
# Ubuntu keeps its archive key as a binary keyring (ubuntu-archive-keyring.gpg).
gpg --batch --export "$(key_fpr ubuntu)" >"$out/keys/ubuntu.gpg"

sign_detached() { # key file -> file.asc (armored)
  gpg --batch --yes --quiet --local-user "$(key_fpr "$1")" --digest-algo SHA512 \
    --armor --detach-sign --output "$3" "$2"
}

# --- apt metadata -----------------------------------------------------------------
sha_lines() { # files (relative) -> " sha256 size name" lines
  local f
  for f in "$@"; do printf ' %s %s %s\n' "$(sha256sum <"$f" | cut -c1-64)" "$(stat -c %s "$f")" "$f"; done
}
# Release, then InRelease (clear-signed) and Release.gpg (detached), the way
# apt wants a signed repository.
sign_release() { # key dir
  (
    cd "$2"
    gpg --batch --yes --quiet --local-user "$(key_fpr "$1")" --digest-algo SHA512 \
      --clearsign --output InRelease Release
    sign_detached "$1" Release Release.gpg
  )
}
# A flat repository (deb822 "Suites: /"): Packages and Release beside the debs.
apt_flat() { # key dir
  (
    cd "$out/$2"
    dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages
    gzip -9nc Packages >Packages.gz
    {
      echo "Origin: gpuctl-lab $1"
      echo "Label: gpuctl-lab $1"
      echo "Architectures: amd64 all"
      echo "Date: $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
      echo "SHA256:"
      sha_lines Packages Packages.gz
    } >Release
  )
  sign_release "$1" "$out/$2"
}
# An archive with dists/SUITE/COMPONENT/binary-amd64 and pool/COMPONENT.
apt_dists() { # key root suite components...
  local key=$1 root=$out/$2 suite=$3 c
  shift 3
  (
    cd "$root"
    for c in "$@"; do
      mkdir -p "pool/$c" "dists/$suite/$c/binary-amd64"
      dpkg-scanpackages --multiversion "pool/$c" /dev/null 2>/dev/null >"dists/$suite/$c/binary-amd64/Packages"
      gzip -9nc "dists/$suite/$c/binary-amd64/Packages" >"dists/$suite/$c/binary-amd64/Packages.gz"
    done
    cd "dists/$suite"
    {
      echo "Origin: gpuctl-lab $key"
      echo "Label: gpuctl-lab $key"
      echo "Suite: $suite"
      echo "Codename: $suite"
      echo "Architectures: amd64 all"
      echo "Components: $*"
      echo "Date: $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
      echo "SHA256:"
      for c in "$@"; do
        sha_lines "$c/binary-amd64/Packages" "$c/binary-amd64/Packages.gz"
      done
    } >Release
  )
  sign_release "$key" "$root/dists/$suite"
}
# The distribution archives exist even when empty, so nodes' sources work.
mkdir -p "$out/ubuntu/pool/main" "$out/rocky/9/BaseOS/x86_64/os/Packages" \
  "$out/rocky/9/AppStream/x86_64/os/Packages"
apt_dists ubuntu ubuntu jammy main restricted universe
[ -d "$out/docker/ubuntu/pool" ] && apt_dists docker docker/ubuntu jammy stable
[ -d "$out/helm/any/pool" ] && apt_dists helm helm/any any main
while read -r d; do
  apt_flat "${d%%/*}" "$d"
done < <(cd "$out" && find . -name '*.deb' -printf '%h\n' | cut -c3- | grep -v '/pool/\|^ubuntu/' | sort -u)

# --- dnf metadata -----------------------------------------------------------------
# Every rpm signed with its repository's key (rpmsign; Debian's rpm looks for
# gpg2, so name gpg), then createrepo_c, then repomd.xml.asc for repo_gpgcheck.
rpm_repo() { # key root
  local key=$1 root=$out/$2 rpms=()
  mapfile -t rpms < <(find "$root" -name '*.rpm' | sort)
  if ((${#rpms[@]})); then
    rpmsign --define "__gpg /usr/bin/gpg" --define "_gpg_name $(key_fpr "$key")" \
      --addsign "${rpms[@]}" >"$work/rpmsign.log" 2>&1 || { cat "$work/rpmsign.log" >&2; return 1; }
    # createrepo_c records each file's mtime: pin it too.
    touch -d "@$SOURCE_DATE_EPOCH" "${rpms[@]}"
  fi
  createrepo_c --quiet --no-database --revision "$SOURCE_DATE_EPOCH" --set-timestamp-to-revision \
    "$root" >/dev/null
  sign_detached "$key" "$root/repodata/repomd.xml" "$root/repodata/repomd.xml.asc"
}
while read -r d; do
  rpm_repo "${d%%/*}" "$d"
done < <(
  cd "$out"
  find . -name '*.rpm' -printf '%h\n' | sed 's#/Packages$##' | cut -c3-
  echo rocky/9/BaseOS/x86_64/os
  echo rocky/9/AppStream/x86_64/os
) | sort -u

# --- the wrong-key repository -----------------------------------------------------
# container-toolkit's packages, metadata re-signed by "wrongkey": with
# container-toolkit's key trusted, apt and dnf must refuse it.
if [ -d "$out/container-toolkit/stable" ]; then
  mkdir -p "$out/wrongkey"
  cp -a "$out/container-toolkit/stable" "$out/wrongkey/"
  [ -d "$out/wrongkey/stable/deb/amd64" ] && sign_release wrongkey "$out/wrongkey/stable/deb/amd64"
  f=$out/wrongkey/stable/rpm/x86_64/repodata/repomd.xml
  [ -f "$f" ] && sign_detached wrongkey "$f" "$f.asc"
fi

# --- non-package artefacts (lab/mirror/build-mirror.sh) ------------------------------
if [ -f "$here/mirror/build-mirror.sh" ]; then
  sh "$here/mirror/build-mirror.sh" "$out"
fi

# nginx's workers are not root: everything served is world-readable.
chmod -R a+rX "$out/keys" "$out/wrongkey" "$out/mirror" 2>/dev/null || true
for r in $REPOS; do chmod -R a+rX "$out/$r"; done
echo "$want" >"$out/.stamp"
for r in $REPOS; do
  printf 'build-repo: %-18s %4d debs %4d rpms\n' "$r" \
    "$(find "$out/$r" -name '*.deb' | wc -l)" "$(find "$out/$r" -name '*.rpm' | wc -l)"
done
