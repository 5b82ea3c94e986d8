# shellcheck shell=bash
# Commands on a running lab's nodes: status, reboot, stop, start, wait,
# fault, exec, ssh.

need_lab() {
  [ -f "$LAB_TABLE" ] || die "no lab '$LAB_NAME' (no $LAB_TABLE); start one with 'gpuctl-lab up'"
}

# up | booting | down | off | failed
node_state() {
  local node=$1 d pid
  d=$(node_dir "$node")
  if pid=$(node_pid1 "$node"); then
    if [ -e "/proc/$pid/root/run/sshd.pid" ]; then echo up; else echo booting; fi
    return 0
  fi
  case $(read_file "$d/state") in
    failed) echo failed ;;
    *)
      if [ "$(read_file "$d/power" off)" = off ]; then
        echo off
      elif pid_alive "$(read_file "$d/supervisor.pid")"; then
        echo booting
      else
        echo down
      fi
      ;;
  esac
}

human_duration() {
  local s=$1
  if ((s < 120)); then echo "${s}s"; elif ((s < 7200)); then echo "$((s / 60))m"; else echo "$((s / 3600))h"; fi
}

cmd_status() {
  need_lab
  local node d st up
  printf '%-10s %-8s %-15s %-13s %5s %7s  %s\n' NODE STATE ADDRESS OS BOOTS UPTIME FAULTS
  for node in $(table_nodes); do
    load_node "$node"
    d=$(node_dir "$node")
    st=$(node_state "$node")
    up=-
    [ "$st" = up ] && up=$(human_duration $(($(date +%s) - $(read_file "$d/booted_at" 0))))
    printf '%-10s %-8s %-15s %-13s %5s %7s  %s\n' "$node" "$st" "$N_ADDR" "$N_OS" \
      "$(read_file "$d/boots" 0)" "$up" "${N_FAULTS:--}"
  done
}

# Runs a command inside a running node, like `docker exec` (all of the
# node's namespaces, its root, a clean environment).
node_exec() {
  local node=$1 pid
  shift
  pid=$(node_pid1 "$node") || die "node $node is not running"
  nsenter --target "$pid" --mount --uts --ipc --net --pid --cgroup --root --wd \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    TERM="${TERM:-dumb}" "$@"
}

cmd_exec() {
  need_lab
  (($# >= 2)) || die "usage: gpuctl-lab exec NODE COMMAND [ARG...]"
  require_node "$1"
  node_exec "$@"
}

cmd_ssh() {
  need_lab
  (($# >= 1)) || die "usage: gpuctl-lab ssh NODE [COMMAND...]"
  require_node "$1"
  # A lab that is down has no route to its subnet: never let ssh try the
  # host's default route instead.
  find_pid1 "$1" || die "node $1 is not running (gpuctl-lab status)"
  shift
  exec ssh -i "$LAB_STATE/ssh/id_ed25519" -o UserKnownHostsFile="$LAB_STATE/known_hosts" \
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=10 -o LogLevel=ERROR \
    "root@$N_ADDR" "$@"
}

node_is_up() { [ "$(node_state "$1")" = up ]; }

# boots_above NODE N: the node has booted more than N times.
boots_above() {
  local boots
  getf boots "$LAB_NODES_DIR/$1/boots" 0
  ((boots > $2))
}

supervisor_gone() {
  local pid
  getf pid "$LAB_NODES_DIR/$1/supervisor.pid"
  ! pid_alive "$pid"
}

wait_nodes_up() {
  local deadline_s=$1 node
  shift
  for node in "$@"; do
    wait_until "$deadline_s" 0.1 node_is_up "$node" ||
      die "node $node not up after ${deadline_s} s (state $(node_state "$node"))"
  done
}

# wait [--timeout S] [NODE...]: until the nodes' sshd listens.
cmd_wait() {
  need_lab
  local timeout=120 nodes=()
  while (($#)); do
    case $1 in
      --timeout) timeout=$2; shift ;;
      *) require_node "$1"; nodes+=("$1") ;;
    esac
    shift
  done
  ((${#nodes[@]})) || mapfile -t nodes < <(table_nodes)
  wait_nodes_up "$timeout" "${nodes[@]}"
}

# Kills a node's PID 1: the pid namespace ends, every process of the node
# with it. The supervisor decides from the power file whether it comes back.
node_kill() {
  find_pid1 "$1" || return 0
  kill -9 "$NODE_PID1" 2>/dev/null || true
}

# reboot NODE [--hard] [--wait]: a clean reboot (ctrl-alt-del to the node's
# systemd), or with --hard a reset (PID 1 killed); the supervisor boots it
# again.
cmd_reboot() {
  need_lab
  local node="" hard=0 wait=0 before
  while (($#)); do
    case $1 in
      --hard) hard=1 ;;
      --wait) wait=1 ;;
      *) node=$1 ;;
    esac
    shift
  done
  require_node "$node"
  getf before "$LAB_NODES_DIR/$node/boots" 0
  find_pid1 "$node" || die "node $node is not running"
  if ((hard)); then
    : >"$LAB_NODES_DIR/$node/reset"
    node_kill "$node"
  else
    # SIGINT is systemd's ctrl-alt-del: a clean reboot, as `systemctl reboot`.
    kill -s INT "$NODE_PID1"
  fi
  if ((wait)); then
    wait_until 60 0.1 boots_above "$node" "$before" ||
      die "node $node did not boot again"
    wait_nodes_up 120 "$node"
  fi
}

# stop NODE: power off (the node stays off until start).
cmd_stop() {
  need_lab
  (($# == 1)) || die "usage: gpuctl-lab stop NODE"
  require_node "$1"
  lab_lock
  local d
  d=$(node_dir "$1")
  echo off >"$d/power"
  node_kill "$1"
  wait_until 10 0.1 supervisor_gone "$1" ||
    warn "supervisor of $1 still running"
}

# start NODE [--wait]: power on a node that is off.
cmd_start() {
  need_lab
  local node="" wait=0
  while (($#)); do
    case $1 in
      --wait) wait=1 ;;
      *) node=$1 ;;
    esac
    shift
  done
  require_node "$node"
  lab_lock
  local d
  d=$(node_dir "$node")
  ip netns list | grep -qw "$(node_netns "$node")" || die "lab '$LAB_NAME' is down; use 'gpuctl-lab up'"
  echo up >"$d/state" # clears "failed"
  supervisor_start "$node"
  ((wait)) && wait_nodes_up 120 "$node"
  return 0
}

# fault NODE FAULT... | fault NODE --clear: sets the node's FAULTS (kept in
# the node table, so it survives `up`; written to the node's profile.env at
# once, through the running node's root or into its disk when it is off).
cmd_fault() {
  need_lab
  (($# >= 2)) || die "usage: gpuctl-lab fault NODE FAULT... | --clear (faults: $KNOWN_FAULTS)"
  local node=$1 f faults=() pid target
  shift
  require_node "$node"
  for f in "$@"; do
    [ "$f" = --clear ] && continue
    check_fault "$f"
    faults+=("$f")
  done
  N_FAULTS="${faults[*]}"
  awk -F'\t' -v OFS='\t' -v n="$node" -v f="${N_FAULTS:--}" '$1 == n { $9 = f } { print }' \
    "$LAB_TABLE" >"$LAB_TABLE.tmp" && mv -f "$LAB_TABLE.tmp" "$LAB_TABLE"
  if pid=$(node_pid1 "$node"); then
    target=/proc/$pid/root/etc/gpuctl-lab/profile.env
  else
    target=$(node_dir "$node")/upper/etc/gpuctl-lab/profile.env
  fi
  profile_env >"$target.tmp"
  mv -f "$target.tmp" "$target"
  log "$node: FAULTS=\"$N_FAULTS\""
}
