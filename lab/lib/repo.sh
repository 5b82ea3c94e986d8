# shellcheck shell=bash
# The lab's package repositories, shared by every lab beside the state dirs
# (<state>/../repo) and served to the nodes over HTTP by the lab's nginx
# (http.sh), never through their file systems: Ubuntu's and Rocky's archives
# (the nodes' own sources) and the vendors' repositories (what gpuctl's
# repos.* steps add), each signed by its own lab key; layout in
# lab/build-repo.sh. Built by lab/build-repo.sh OUTDIR (GPUCTL_LAB_BUILD_REPO
# overrides the script). Rebuilt only when the builder, lab/mirror-debs.list,
# lab/standins/ or lab/mirror/ changed: repo/.source-hash holds the hash of
# their content.

repo_builder() { echo "${GPUCTL_LAB_BUILD_REPO:-$LAB_ROOT/build-repo.sh}"; }

repo_source_hash() {
  local builder
  builder=$(repo_builder)
  {
    echo "builder $builder"
    [ -f "$builder" ] && sha256sum "$builder"
    [ -f "$LAB_ROOT/mirror-debs.list" ] && sha256sum "$LAB_ROOT/mirror-debs.list"
    if [ -d "$LAB_ROOT/standins" ]; then
      (cd "$LAB_ROOT" && find standins mirror -type f -print0 2>/dev/null | sort -z | xargs -0 -r sha256sum)
    fi
  } | sha256sum | cut -c1-64
}

# Builds the repository if its sources changed. Serialised between labs.
repo_ensure() {
  local hash builder
  mkdir -p "$LAB_REPO"
  exec {lock}>"$LAB_REPO.lock"
  flock "$lock"
  hash=$(repo_source_hash)
  if [ "$(read_file "$LAB_REPO/.source-hash")" = "$hash" ] &&
    [ -f "$LAB_REPO/ubuntu/dists/jammy/InRelease" ] && [ -f "$LAB_REPO/keys/FINGERPRINTS" ]; then
    exec {lock}>&-
    return 0
  fi
  builder=$(repo_builder)
  [ -f "$builder" ] || die "no repository builder ($builder): the nodes' package sources need it"
  log "building the package repositories ($builder $LAB_REPO)"
  bash "$builder" "$LAB_REPO" >"$LAB_REPO.log" 2>&1 ||
    die "repository build failed: see $LAB_REPO.log"
  echo "$hash" >"$LAB_REPO/.source-hash"
  exec {lock}>&-
}
