# shellcheck shell=bash disable=SC2034  # N_* and LAB_MASTER_ADDR are read in disk.sh
# up and down: the whole lab's life. Nodes are booted by one detached
# supervisor each (supervisor.sh); `up` starts them a few at a time and polls
# until every node's sshd serves its own host key.

# Serialises up/down/start/stop of one lab (fd kept open until exit).
lab_lock() {
  mkdir -p "$(dirname "$LAB_STATE")"
  exec {LAB_LOCK_FD}>"$LAB_STATE.lock"
  flock -w 120 "$LAB_LOCK_FD" ||
    die "lab '$LAB_NAME' is locked by another gpuctl-lab (holders: $(fuser "$LAB_STATE.lock" 2>&1 | cut -d: -f2))"
}

# True if pid is alive and its command line mentions this lab's state dir
# (guards against killing a reused pid).
pid_is_ours() {
  local args=()
  pid_alive "$1" || return 1
  mapfile -d '' -t args <"/proc/$1/cmdline" 2>/dev/null || return 1
  [[ " ${args[*]} " == *" $LAB_STATE/"* ]]
}

supervisor_start() {
  local node=$1 d=$LAB_NODES_DIR/$1 pid
  getf pid "$d/supervisor.pid"
  if pid_is_ours "$pid"; then return 0; fi
  echo on >"$d/power"
  # The lab lock's fd must not live on in the supervisor.
  setsid -f "$LAB_LIB/supervisor.sh" "$LAB_STATE" "$node" </dev/null >>"$d/supervisor.log" 2>&1 \
    {LAB_LOCK_FD}>&-
}

# Pids of the processes inside this lab's nodes: everything in the lab's
# network namespaces and cgroups (each node's PID 1 included).
node_pids() {
  net_pids
  if [ -n "$LAB_CGROUP" ] && [ -d "$LAB_CGROUP" ]; then
    find "$LAB_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null
  fi
  return 0
}

# Pids of this lab's supervisors and of the `unshare` holding each node.
keeper_pids() {
  local d p f
  for d in "$LAB_NODES_DIR"/*/; do
    [ -d "$d" ] || continue
    for f in supervisor.pid unshare.pid; do
      getf p "$d$f"
      pid_is_ours "$p" && echo "$p"
    done
  done
  return 0
}

lab_pids() {
  keeper_pids
  node_pids
}

# kill -9 the pids a lister prints until none is left; bounded.
kill_until_gone() {
  local lister=$1 pids i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pids=$("$lister" | sort -u | tr '\n' ' ')
    [ -n "${pids// /}" ] || return 0
    # shellcheck disable=SC2086  # a list of pids
    kill -9 $pids 2>/dev/null || true
    sleep "0.$i"
  done
  [ -z "$("$lister")" ]
}

# True when no process (not even a zombie) is in this lab's cgroups.
cgroup_idle() {
  [ -z "$LAB_CGROUP" ] || ! grep -qs "^0::/gpuctl-lab/$LAB_NAME/" /proc/[0-9]*/cgroup
}

keepers_gone() { [ -z "$(keeper_pids)" ]; }

# Stops everything of this lab and removes what it made on the host except
# the state dir (disks, keys). Idempotent; works on a half-dead lab.
# Order matters. Killing a node's PID 1 ends its pid namespace, and the
# kernel lets that PID 1 go only once every process of the namespace is
# reaped; its `unshare` then reaps it and exits, and the supervisor (power
# off) reaps `unshare` and exits. Killing the keepers first would leave the
# nodes' processes as zombies for the host's init to reap some time later.
lab_down() {
  local d node mnt pids=()
  for d in "$LAB_NODES_DIR"/*/; do
    [ -d "$d" ] && echo off >"$d/power"
  done
  for node in $(table_nodes); do
    find_pid1 "$node" && pids+=("$NODE_PID1")
  done
  ((${#pids[@]} == 0)) || kill -9 "${pids[@]}" 2>/dev/null || true
  wait_until 10 0.1 keepers_gone || true
  kill_until_gone node_pids || warn "processes left in the nodes: $(node_pids | tr '\n' ' ')"
  kill_until_gone keeper_pids || warn "supervisors left: $(keeper_pids | tr '\n' ' ')"
  wait_until 10 0.1 cgroup_idle || warn "processes still in $LAB_CGROUP"
  # Node mounts live in the nodes' own mount namespaces and die with them;
  # anything under the state dir in the host's namespace is a leftover.
  while read -r mnt; do
    umount "$mnt" 2>/dev/null || umount -l "$mnt" || warn "could not unmount $mnt"
  done < <(awk -v s="$LAB_STATE/" 'index($2, s) == 1 { print $2 }' /proc/self/mounts | sort -r)
  net_down
  if [ -n "$LAB_CGROUP" ] && [ -d "$LAB_CGROUP" ]; then
    find "$LAB_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null || true
    rmdir "$(dirname "$LAB_CGROUP")" 2>/dev/null || true
  fi
  for d in "$LAB_NODES_DIR"/*/; do
    [ -d "$d" ] || continue
    rm -f "$d/supervisor.pid" "$d/unshare.pid"
    echo down >"$d/state"
  done
  return 0
}

cmd_down() {
  local purge=0
  while (($#)); do
    case $1 in
      --purge) purge=1 ;;
      *) die "down: unknown option $1" ;;
    esac
    shift
  done
  need_root
  lab_lock
  lab_down
  http_release # the last lab down stops the lab's nginx (http.sh)
  if ((purge)) && [ -d "$LAB_STATE" ]; then
    if awk -v s="$LAB_STATE/" 'index($2, s) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
      die "something is still mounted under $LAB_STATE; not purging"
    fi
    rm -rf --one-file-system "$LAB_STATE"
    log "lab '$LAB_NAME' is down; disks and keys purged"
  else
    log "lab '$LAB_NAME' is down"
  fi
  rm -f "$LAB_STATE.lock"
}

# Prints nodes whose sshd is listening (its pid file exists in the node).
nodes_listening() {
  local node
  for node in "$@"; do
    find_pid1 "$node" || continue
    [ -e "/proc/$NODE_PID1/root/run/sshd.pid" ] && echo "$node"
  done
  return 0
}

# Confirms with ssh-keyscan that each node serves exactly its own host key.
verify_host_keys() {
  local addrs got want
  addrs=$(cut -f2 "$LAB_TABLE")
  # shellcheck disable=SC2086  # a list of addresses
  got=$(ssh-keyscan -T 5 -t ed25519 $addrs 2>/dev/null | awk '{ print $1, $2, $3 }' | sort)
  want=$(awk -F'[ ,]' '{ print $2, $3, $4 }' "$LAB_STATE/known_hosts" | sort)
  [ "$got" = "$want" ] && return 0
  warn "host keys served differ from known_hosts:"
  diff <(echo "$want") <(echo "$got") >&2 || true
  return 1
}

# Boots nodes with at most PARALLEL booting at once; waits for their sshd.
boot_nodes() {
  local deadline_s=$1 parallel=$2
  shift 2
  local pending=("$@") booting=() ready=() node end ok n st
  end=$(($(now_ms) + deadline_s * 1000))
  while ((${#pending[@]} + ${#booting[@]} > 0)); do
    while ((${#booting[@]} < parallel && ${#pending[@]} > 0)); do
      supervisor_start "${pending[0]}"
      booting+=("${pending[0]}")
      pending=("${pending[@]:1}")
    done
    for node in "${booting[@]}"; do
      getf st "$LAB_NODES_DIR/$node/state"
      [ "$st" = failed ] || continue
      warn "node $node failed to boot 3 times; its console:"
      tail -n 20 "$LAB_NODES_DIR/$node/console.log" >&2 || true
      return 1
    done
    ok=$(nodes_listening "${booting[@]}")
    if [ -n "$ok" ]; then
      n=()
      for node in "${booting[@]}"; do
        if grep -qxF "$node" <<<"$ok"; then ready+=("$node"); else n+=("$node"); fi
      done
      booting=("${n[@]}")
      continue
    fi
    if (($(now_ms) > end)); then
      for node in "${booting[@]}"; do
        warn "node $node not up after ${deadline_s} s; its console:"
        tail -n 15 "$(node_dir "$node")/console.log" >&2 || true
      done
      return 1
    fi
    sleep 0.1
  done
}

# Host-wide limits the nodes share. Each node's systemd, journald, logind and
# dbus hold ~6 inotify instances, all counted against root's (and
# messagebus's) fs.inotify.max_user_instances, 128 by default: at ~20 nodes
# systemd fails to start, silently (exit 255). Raise the limit, never lower it.
host_limits() {
  local count=$1 cur need
  need=$((256 + 8 * count))
  getf cur /proc/sys/fs/inotify/max_user_instances 0
  if ((cur < need)); then
    echo "$need" >/proc/sys/fs/inotify/max_user_instances ||
      die "fs.inotify.max_user_instances is $cur; $count nodes need $need"
    log "raised fs.inotify.max_user_instances from $cur to $need (host-wide, until reboot)"
  fi
}

cmd_up() {
  local profile=seed nodes="" rocky=0 timeout="" parallel=${GPUCTL_LAB_PARALLEL:-6} faults=()
  local sudo_users=0 from=""
  while (($#)); do
    case $1 in
      --from) from=${2:?--from wants an inventory file}; shift ;;
      --profile) profile=$2; shift ;;
      --nodes) nodes=$2; shift ;;
      --rocky) rocky=$2; shift ;;
      --fault) faults+=("$2"); shift ;;
      --timeout) timeout=$2; shift ;;
      --parallel) parallel=$2; shift ;;
      --sudo-users) sudo_users=1 ;;
      *) die "up: unknown option $1 (see gpuctl-lab help)" ;;
    esac
    shift
  done
  if [ -n "$from" ]; then
    if [ -n "$nodes" ] || [ "$profile" != seed ] || ((sudo_users)); then
      die "up: --from takes the nodes from the inventory (no --profile, --nodes or --sudo-users)"
    fi
    [ -r "$from" ] || die "up --from: cannot read $from"
    from=$(realpath "$from")
    # Refuse what the lab cannot build before touching anything.
    from_table "$from" 198.18.255 >/dev/null || exit 1
  fi
  need_root
  need_tools ip unshare nsenter setpriv pivot_root flock ssh-keygen ssh-keyscan sshd \
    createrepo_c /usr/bin/python3 nginx gpg
  [ -x /lib/systemd/systemd ] || die "systemd is not installed (scripts/install-deps.sh lab)"
  lab_lock
  local t0 table n os v
  t0=$(now_ms)
  [ -d "$LAB_STATE" ] && lab_down
  mkdir -p "$LAB_STATE/ssh" "$LAB_NODES_DIR"
  echo "$LAB_NAME" >"$LAB_STATE/name"
  [ -s "$LAB_STATE/subnet" ] || choose_subnet >"$LAB_STATE/subnet"
  if [ ! -f "$LAB_STATE/ssh/id_ed25519" ]; then
    ssh-keygen -q -t ed25519 -N '' -C "gpuctl-lab-$LAB_NAME" -f "$LAB_STATE/ssh/id_ed25519"
  fi

  if [ -n "$from" ]; then
    # The site's nodes (lab/lib/from-inventory.py); fails naming a node whose
    # OS the lab cannot build.
    table=$(from_table "$from" | apply_faults "${faults[@]}")
  else
    table=$(profile_table "$profile" "$nodes" "$rocky" | apply_faults "${faults[@]}")
  fi
  # A different layout than the disks were made for: start from clean disks.
  if [ -f "$LAB_TABLE" ] && [ "$(cut -f1-8 "$LAB_TABLE")" != "$(cut -f1-8 <<<"$table")" ]; then
    log "layout changed since the last up: new disks for every node"
    rm -rf --one-file-system "$LAB_NODES_DIR" "$LAB_STATE/nfs"
    mkdir -p "$LAB_NODES_DIR"
  fi
  # The lab's NFS store: what the NFS server's exports hold (docs/lab.md, NFS).
  mkdir -p "$LAB_STATE/nfs"
  echo "$table" >"$LAB_TABLE"
  users_plan "$sudo_users" # STATE/users.tsv: who logs in where (users.sh)
  echo "$profile" >"$LAB_STATE/profile"
  [ -n "$nodes" ] && echo "nodes $nodes" >"$LAB_STATE/profile"
  [ -n "$from" ] && echo "from $from" >"$LAB_STATE/profile"
  repo_ensure

  n=$(wc -l <"$LAB_TABLE")
  host_limits "$n"
  log "lab '$LAB_NAME': $n nodes on $(lab_net).0/24, bridge $LAB_BRIDGE, state $LAB_STATE"
  net_up_bridge "$(lab_net)"
  http_ensure # the nodes' package mirror (http.sh); base_prepare fetches from it
  net_up_nodes
  LAB_MASTER_ADDR=$(awk -F'\t' '$4 ~ /(^|,)master(,|$)/ { print $2; exit }' "$LAB_TABLE")
  dev_skeleton
  while read -r os; do base_prepare "$os"; done < <(cut -f3 "$LAB_TABLE" | sort -u)
  while IFS=$'\t' read -r N_NAME N_ADDR N_OS N_ROLES N_GPU_MODEL N_GPU_COUNT N_GPU_MEM N_IB N_FAULTS N_NVSWITCH; do
    for v in N_GPU_MODEL N_GPU_COUNT N_GPU_MEM N_IB N_FAULTS N_NVSWITCH; do
      [ "${!v}" = "-" ] && printf -v "$v" '%s' ""
    done
    disk_prepare
    echo 0 >"$LAB_NODES_DIR/$N_NAME/boots"
    printf '%s\n' "$N_OS" >"$LAB_NODES_DIR/$N_NAME/os"
  done <"$LAB_TABLE"
  write_known_hosts
  write_ssh_config
  if [ -n "$from" ]; then
    from_write "$from" # inventory.yaml and address-map.tsv (inventory.sh)
  else
    rm -f "$LAB_STATE/address-map.tsv"
    write_inventory "$profile"
  fi
  fabric_prepare # who runs the IB subnet manager (inventory.sh)
  local t1 t2
  t1=$(now_ms)
  # shellcheck disable=SC2046  # node names have no spaces
  boot_nodes "${timeout:-$((60 + 2 * n))}" "$parallel" $(table_nodes) ||
    die "bring-up failed; inspect with 'gpuctl-lab status', clean with 'gpuctl-lab down'"
  verify_host_keys || die "a node serves the wrong host key"
  t2=$(now_ms)
  printf 'gpuctl-lab: lab "%s" is up: %d nodes in %d.%01d s (prepare %d.%01d s, boot %d.%01d s, %d ms per node)\n' \
    "$LAB_NAME" "$n" $(((t2 - t0) / 1000)) $(((t2 - t0) % 1000 / 100)) \
    $(((t1 - t0) / 1000)) $(((t1 - t0) % 1000 / 100)) \
    $(((t2 - t1) / 1000)) $(((t2 - t1) % 1000 / 100)) $(((t2 - t0) / n)) >&2
  echo "$((t2 - t0))" >"$LAB_STATE/bringup_ms"
  printf 'inventory:   %s\nssh:         ssh -F %s NODE\n' "$LAB_STATE/inventory.yaml" \
    "$LAB_STATE/ssh_config"
  [ -z "$from" ] || printf 'address map: %s\n' "$LAB_STATE/address-map.tsv"
}
