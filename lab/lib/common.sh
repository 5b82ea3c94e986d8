# shellcheck shell=bash disable=SC2034  # globals here are used by the other lib files
# Common helpers of gpuctl-lab: messages, names derived from the lab's name,
# state-directory layout, small utilities. Sourced by gpuctl-lab and the
# supervisor; defines functions and variables only.
#
# Everything a lab creates on the host carries a name derived from the lab's
# name, so two labs coexist and `down` removes exactly its own things:
#   bridge       gl-<name>                 (gl-<5 chars>_<hash6> past 12 chars)
#   netns        gl-<name>-<node>
#   veth (host)  gv<hash6>-<index>         (attached to the bridge)
#   cgroup       <cgroup2>/gpuctl-lab/<name>/<node>
#   state        /var/lib/gpuctl-lab/<name>  (or --state / GPUCTL_LAB_STATE;
#                GPUCTL_LAB_HOME replaces /var/lib/gpuctl-lab for every lab and
#                the repository, so two checkouts never share a repository)

log() { printf 'gpuctl-lab: %s\n' "$*" >&2; }
warn() { printf 'gpuctl-lab: warning: %s\n' "$*" >&2; }
die() {
  printf 'gpuctl-lab: error: %s\n' "$*" >&2
  exit 1
}

# Monotonic-enough wall clock in milliseconds (bash 5: EPOCHREALTIME).
now_ms() {
  local t=${EPOCHREALTIME/./}
  echo $((t / 1000))
}

hash_hex() { printf '%s' "$1" | sha256sum | cut -c1-"${2:-64}"; }

valid_name() { [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,30}$ ]]; }

# Sets the lab-wide names from LAB_NAME and LAB_STATE.
lab_names() {
  valid_name "$LAB_NAME" || die "invalid lab name '$LAB_NAME' (use [a-z0-9-], at most 31 characters)"
  LAB_HASH=$(hash_hex "$LAB_NAME" 6)
  if ((${#LAB_NAME} <= 12)); then
    LAB_BRIDGE="gl-$LAB_NAME"
  else
    # "_" never occurs in a lab name, so this cannot equal a short name's bridge.
    LAB_BRIDGE="gl-${LAB_NAME:0:5}_${LAB_HASH}"
  fi
  LAB_VETH_PREFIX="gv$LAB_HASH-"
  LAB_NETNS_PREFIX="gl-$LAB_NAME-"
  LAB_STATE=${LAB_STATE:-${GPUCTL_LAB_STATE:-${GPUCTL_LAB_HOME:-/var/lib/gpuctl-lab}/$LAB_NAME}}
  LAB_STATE=$(realpath -m "$LAB_STATE")
  [ "$(dirname "$LAB_STATE")" != / ] || die "state dir $LAB_STATE: use a directory two levels deep at least"
  LAB_REPO=$(dirname "$LAB_STATE")/repo
  LAB_NODES_DIR=$LAB_STATE/nodes
  LAB_TABLE=$LAB_STATE/nodes.tsv
  LAB_CGROUP=""
  local cg
  for cg in /sys/fs/cgroup /sys/fs/cgroup/unified; do
    if [ "$(stat -f -c %T "$cg" 2>/dev/null)" = cgroup2fs ]; then
      LAB_CGROUP=$cg/gpuctl-lab/$LAB_NAME
      break
    fi
  done
}

node_netns() { echo "$LAB_NETNS_PREFIX$1"; }
node_dir() { echo "$LAB_NODES_DIR/$1"; }

# The node table (state/nodes.tsv), one node a line, tab-separated:
#   name address os roles(comma) gpu_model gpu_count gpu_mem_mib ib_ports faults nvswitch
# Empty fields are "-"; nvswitch is 1 for an NVSwitch board. ib_ports and
# faults use spaces inside the field.
table_nodes() { [ -f "$LAB_TABLE" ] && cut -f1 "$LAB_TABLE"; }

# Loads one node's row into N_* variables (N_INDEX: its line number, from 1);
# fails if the node is unknown. No subprocess: called per node at 100 nodes.
load_node() {
  local i=0 v
  [ -f "$LAB_TABLE" ] || return 1
  while IFS=$'\t' read -r N_NAME N_ADDR N_OS N_ROLES N_GPU_MODEL N_GPU_COUNT N_GPU_MEM N_IB N_FAULTS N_NVSWITCH; do
    i=$((i + 1))
    [ "$N_NAME" = "$1" ] || continue
    N_INDEX=$i
    for v in N_GPU_MODEL N_GPU_COUNT N_GPU_MEM N_IB N_FAULTS N_NVSWITCH; do
      [ "${!v}" = "-" ] && printf -v "$v" '%s' ""
    done
    return 0
  done <"$LAB_TABLE"
  return 1
}

require_node() {
  load_node "$1" || die "no node '$1' in lab '$LAB_NAME' (state $LAB_STATE)"
}

# The subnet of this lab (a /24 inside 198.18.0.0/15), e.g. "198.18.37".
lab_net() { cat "$LAB_STATE/subnet" 2>/dev/null; }

# getf VAR FILE [DEFAULT]: sets VAR to the first line of a small state file
# (builtins only), or to DEFAULT when the file is missing or empty.
getf() {
  local _v=""
  [ -r "$2" ] && { read -r _v <"$2" || true; }
  printf -v "$1" '%s' "${_v:-${3:-}}"
}

# Prints the first line of a small state file, or the default.
read_file() {
  local v
  getf v "$1" "${2:-}"
  printf '%s\n' "$v"
}

# True if the process exists and is not a zombie (builtins only).
pid_alive() {
  local st=""
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || return 1
  read -r st <"/proc/$1/stat" 2>/dev/null || return 1
  st=${st##*) }
  [ "${st%% *}" != Z ]
}

# Sets NODE_PID1 to the host pid of a node's PID 1 (its systemd); fails when
# the node is off. Builtins only: `up` polls this for every booting node.
find_pid1() {
  local upid="" child=""
  NODE_PID1=""
  [ -r "$LAB_NODES_DIR/$1/unshare.pid" ] || return 1
  read -r upid <"$LAB_NODES_DIR/$1/unshare.pid" || true
  [ -n "$upid" ] && [ -r "/proc/$upid/task/$upid/children" ] || return 1
  read -r child _ <"/proc/$upid/task/$upid/children" || true
  [ -n "$child" ] && [ -d "/proc/$child" ] || return 1
  NODE_PID1=$child
}

node_pid1() { find_pid1 "$1" && echo "$NODE_PID1"; }

# Waits until a command succeeds, polling; fails after DEADLINE seconds.
wait_until() {
  local deadline_s=$1 interval=$2
  shift 2
  local end=$(($(now_ms) + deadline_s * 1000))
  until "$@"; do
    (($(now_ms) < end)) || return 1
    sleep "$interval"
  done
}

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, mounts)"; }

need_tools() {
  local t missing=()
  for t in "$@"; do command -v "$t" >/dev/null || missing+=("$t"); done
  ((${#missing[@]} == 0)) || die "missing tools: ${missing[*]} (run scripts/install-deps.sh lab)"
}
