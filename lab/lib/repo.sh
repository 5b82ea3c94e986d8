# shellcheck shell=bash
# The lab's package repository, shared by every lab beside the state dirs
# (<state>/../repo), bind-mounted read-only at /srv/gpuctl-repo in each node:
#   repo/deb   flat apt repository   (deb [trusted=yes] file:/srv/gpuctl-repo/deb ./)
#   repo/rpm   createrepo_c repository (baseurl=file:///srv/gpuctl-repo/rpm)
# Built by lab/build-repo.sh OUTDIR (the stand-ins' builder; GPUCTL_LAB_BUILD_REPO
# overrides the script). Rebuilt only when the builder, lab/mirror-debs.list or
# lab/standins/ changed:
# repo/.source-hash holds the hash of their content. Without a builder the lab
# makes an empty repository, so apt and dnf still work.

repo_builder() { echo "${GPUCTL_LAB_BUILD_REPO:-$LAB_ROOT/build-repo.sh}"; }

repo_source_hash() {
  local builder
  builder=$(repo_builder)
  {
    echo "builder $builder"
    [ -f "$builder" ] && sha256sum "$builder"
    [ -f "$LAB_ROOT/mirror-debs.list" ] && sha256sum "$LAB_ROOT/mirror-debs.list"
    if [ -d "$LAB_ROOT/standins" ]; then
      (cd "$LAB_ROOT" && find standins -type f -print0 | sort -z | xargs -0 -r sha256sum)
    fi
  } | sha256sum | cut -c1-64
}

repo_empty() {
  local out=$1
  mkdir -p "$out/deb" "$out/rpm"
  (cd "$out/deb" && : >Packages && gzip -9nc Packages >Packages.gz)
  createrepo_c -q "$out/rpm" >/dev/null
}

# Builds the repository if its sources changed. Serialised between labs.
repo_ensure() {
  local hash builder
  mkdir -p "$LAB_REPO"
  exec {lock}>"$LAB_REPO.lock"
  flock "$lock"
  hash=$(repo_source_hash)
  if [ "$(read_file "$LAB_REPO/.source-hash")" = "$hash" ] && [ -d "$LAB_REPO/deb" ] && [ -d "$LAB_REPO/rpm" ]; then
    exec {lock}>&-
    return 0
  fi
  builder=$(repo_builder)
  if [ -x "$builder" ] || [ -f "$builder" ]; then
    log "building the package repository ($builder $LAB_REPO)"
    bash "$builder" "$LAB_REPO" >"$LAB_REPO.log" 2>&1 ||
      die "repository build failed: see $LAB_REPO.log"
  else
    warn "no repository builder ($builder): nodes get an empty repository"
    repo_empty "$LAB_REPO"
  fi
  echo "$hash" >"$LAB_REPO/.source-hash"
  exec {lock}>&-
}
