# shellcheck shell=bash
# The lab's web server: one nginx (Debian's) for every lab of this lab home
# (the directory holding the state dirs and the repository), serving the
# repository tree lab/build-repo.sh makes (repo.sh) on port 8642 of every
# address, to the lab range and localhost only. Nodes reach it at
# http://<lab-net>.1:8642/ (their bridge's host address), the way a site's
# machines reach its mirror; nothing else of the host is visible to them.
#
#   <home>/http/nginx.conf, nginx.pid, error.log   its config and state
#   <home>/http/labs/<name>                          one file per lab using it
# `up` starts it when it is not running; `down` of the last lab stops it. A
# lab that crashed leaves its file behind, so nginx stays up: harmless (it
# serves public packages and keys, to the lab range only).

LAB_HTTP_PORT=${GPUCTL_LAB_HTTP_PORT:-8642}

http_dir() { echo "$(dirname "$LAB_STATE")/http"; }

# The URL the nodes of this lab use for the repository tree.
lab_url() { echo "http://$(lab_net).1:$LAB_HTTP_PORT"; }

# True when the pid file names a live nginx master running our config.
http_running() {
  local d pid args=()
  d=$(http_dir)
  getf pid "$d/nginx.pid"
  pid_alive "$pid" || return 1
  mapfile -d '' -t args <"/proc/$pid/cmdline" 2>/dev/null || return 1
  [[ " ${args[*]} " == *"$d/nginx.conf"* ]]
}

http_config() {
  local d=$1 user=nobody
  id www-data >/dev/null 2>&1 && user=www-data
  cat <<EOF
# Written by gpuctl-lab up (lab/lib/http.sh): the labs' package mirror.
user $user;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 512; }
http {
  types {
    text/plain asc pub key yml yaml txt;
    application/gzip gz tgz;
    application/xml xml;
  }
  default_type application/octet-stream;
  access_log $d/access.log;
  client_body_temp_path $d/tmp;
  sendfile on;
  server_tokens off;
  server {
    listen 0.0.0.0:$LAB_HTTP_PORT;
    root $LAB_REPO;
    autoindex on;
    allow 127.0.0.0/8;
    allow 198.18.0.0/15;
    deny all;
    # .gnupg (the signing keys), .stamp, .source-hash: never served.
    location ~ /\\. { deny all; }
  }
}
EOF
}

# Runs nginx with only stdin, stdout and stderr open.
http_start() (
  local fd
  for fd in /proc/self/fd/*; do
    fd=${fd##*/}
    ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
  done
  exec nginx -q -c "$1/nginx.conf" -p "$1" -e "$1/error.log"
)

# Starts nginx unless running (reloads it if its config changed); records
# this lab as a user. Serialised between labs by <home>/http.lock.
http_ensure() {
  local d lock
  d=$(http_dir)
  mkdir -p "$d/labs" "$d/tmp"
  exec {lock}>"$d.lock"
  flock "$lock"
  : >"$d/labs/$LAB_NAME"
  http_config "$d" >"$d/nginx.conf.new"
  if http_running; then
    if ! cmp -s "$d/nginx.conf.new" "$d/nginx.conf"; then
      mv -f "$d/nginx.conf.new" "$d/nginx.conf"
      nginx -q -c "$d/nginx.conf" -p "$d" -e "$d/error.log" -s reload ||
        die "nginx did not take its new config: $(tail -n 3 "$d/error.log")"
    fi
    rm -f "$d/nginx.conf.new"
    exec {lock}>&-
    return 0
  fi
  mv -f "$d/nginx.conf.new" "$d/nginx.conf"
  rm -f "$d/nginx.pid"
  # nginx binds its port before it daemonizes, so once this returns the
  # nodes can fetch. It outlives this lab: it must keep none of our
  # descriptors (a lock held around `up`, such as the lab tests' flock, would
  # stay held; a test reading `up`'s output through a pipe would wait).
  http_start "$d" </dev/null >>"$d/nginx.out" 2>&1 ||
    die "nginx did not start on port $LAB_HTTP_PORT (another lab home's? set GPUCTL_LAB_HTTP_PORT): $(tail -n 3 "$d/error.log" "$d/nginx.out" 2>/dev/null)"
  log "nginx serves $LAB_REPO on port $LAB_HTTP_PORT ($d)"
  exec {lock}>&-
}

# This lab no longer needs nginx; the last one out stops it.
http_release() {
  local d lock pid
  d=$(http_dir)
  [ -d "$d" ] || return 0
  exec {lock}>"$d.lock"
  flock "$lock"
  rm -f "$d/labs/$LAB_NAME"
  if [ -z "$(ls -A "$d/labs" 2>/dev/null)" ] && http_running; then
    getf pid "$d/nginx.pid"
    kill -QUIT "$pid" 2>/dev/null || true
    log "nginx stopped (no lab left)"
  fi
  exec {lock}>&-
}

# The inventory's package sources and mirrors: the lab's vendor repositories
# with their keys and fingerprints, the flannel manifest, the GPU Operator's
# chart repository and the registry mirrors, all on the lab's nginx, as an
# air-gapped site writes them (docs/lab.md). No `policy:` block: tests add
# their own (policy.docker, policy.air_gapped), and a key may appear once.
inventory_sources() {
  local url r fpr
  url=$(lab_url)
  echo "repositories:"
  for r in cuda container-toolkit kubernetes docker ofed epel helm; do
    fpr=$(awk -v r="$r" '$1 == r { print $2 }' "$LAB_REPO/keys/FINGERPRINTS" 2>/dev/null)
    [ -n "$fpr" ] || continue
    printf '  %s:\n    url: %s/%s\n    key: %s/keys/%s.asc\n    fingerprint: %s\n' \
      "$r" "$url" "$r" "$url" "$r" "$fpr"
  done
  cat <<EOF
mirrors:
  cni_manifest: $url/mirror/kube-flannel.yml
  gpu_operator_chart: $url/mirror/charts
  registries:
    "*": $url/registry
EOF
}
