#!/bin/bash
# What one `gpuctl plan` costs each node of a running lab (docs/benchmark.md,
# "Probe cost per node"): the node CPU it used and the processes it started.
#
#   scripts/probe-cost.sh [--name LAB] [--gpuctl BIN] [--playbooks DIR]
#                         [--runs N] [--what plan|ssh|idle] [--self-test]
#
# Per run and node, before and after the command:
#   CPU    usage_usec of the node's cgroup ($LAB_CGROUP/NODE/cpu.stat): every
#          process of the node (sshd, its sessions, systemd, the probes).
#   procs  the node's pid namespace's last pid (/proc/sys/kernel/ns_last_pid,
#          read by a `cat` started in the node's pid namespace, which is not
#          in the node's cgroup). Pids are handed out in order, so the
#          difference, less the one pid the reading `cat` takes, is the
#          number of processes (and threads) the node started.
# Then the same over an idle stretch as long as the command took (nothing
# sent to the nodes): what the node does anyway (journald, timers). The
# table shows the command's figures with the idle ones subtracted, the
# median of the runs, per node.
#
#   --what plan   `gpuctl plan` of the lab's inventory (the default)
#   --what ssh    one plain `ssh NODE true` per node, in parallel: the floor
#   --what idle   nothing: checks that an idle node reads ~0 after subtraction
#   --self-test   checks the process counter: runs `true` 20 times inside each
#                 node (nsenter) and expects 21 processes (sh + 20)
# Needs root (nsenter, the lab's state). GPUCTL defaults to build/release/gpuctl.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
name=${GPUCTL_LAB_NAME:-gpuctl}
gpuctl=$root/build/release/gpuctl
playbooks=""
runs=3
what=plan
self_test=""

die() {
  echo "probe-cost: $*" >&2
  exit 1
}

while (($#)); do
  case $1 in
    --name) name=${2:?}; shift 2 ;;
    --gpuctl) gpuctl=${2:?}; shift 2 ;;
    --playbooks) playbooks=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --what) what=${2:?}; shift 2 ;;
    --self-test) self_test=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (--help)" ;;
  esac
done
case $what in plan | ssh | idle) ;; *) die "--what is plan, ssh or idle" ;; esac
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs wants a positive count"
[ -x "$gpuctl" ] || die "$gpuctl is not executable (--gpuctl)"

eval "$("$gpuctl" lab env --name "$name")"
[ -d "${LAB_CGROUP:-/nonexistent}" ] || die "lab '$name' is not up (no $LAB_CGROUP)"
[ -f "$LAB_STATE/nodes.tsv" ] || die "lab '$name' has no node table ($LAB_STATE/nodes.tsv)"

nodes=()
declare -A os pid1
while IFS=$'\t' read -r n _ o _; do
  nodes+=("$n")
  os[$n]=$o
  # Neither file ends in a newline: read fails but sets the variable.
  upid="" child=""
  read -r upid <"$LAB_STATE/nodes/$n/unshare.pid" || true
  if [ -n "$upid" ]; then read -r child _ <"/proc/$upid/task/$upid/children" || true; fi
  [ -n "$child" ] || die "node $n is not running"
  pid1[$n]=$child
done <"$LAB_STATE/nodes.tsv"

# snapshot ARRAY_PREFIX: sets <prefix>_cpu[NODE] (usec) and <prefix>_pid[NODE].
declare -A a_cpu a_pid b_cpu b_pid
snapshot() {
  local n key val
  for n in "${nodes[@]}"; do
    # cpu.stat's first line is usage_usec.
    read -r key val <"$LAB_CGROUP/$n/cpu.stat"
    [ "$key" = usage_usec ] || die "unexpected $LAB_CGROUP/$n/cpu.stat"
    printf -v "$1_cpu[$n]" '%s' "$val"
    printf -v "$1_pid[$n]" '%s' "$(nsenter --target "${pid1[$n]}" --pid cat /proc/sys/kernel/ns_last_pid)"
  done
}

now_us() { echo "${EPOCHREALTIME/./}"; }

run_command() {
  case $what in
    plan)
      local args=()
      [ -z "$playbooks" ] || args=(--playbooks "$playbooks")
      # Exit status 2: changes pending, a plan all the same.
      "$gpuctl" "${args[@]}" plan "$LAB_INVENTORY" >"$out_dir/plan.$run.txt" 2>&1 || {
        local rc=$?
        [ "$rc" = 2 ] || die "gpuctl plan exited $rc (see $out_dir/plan.$run.txt)"
      }
      ;;
    ssh)
      local n pids=()
      for n in "${nodes[@]}"; do
        ssh -F "$LAB_STATE/ssh_config" -o BatchMode=yes "$n" true &
        pids+=($!)
      done
      for n in "${pids[@]}"; do wait "$n" || die "ssh failed"; done
      ;;
    idle) sleep 1 ;;
  esac
}

if [ -n "$self_test" ]; then
  bad=0
  for n in "${nodes[@]}"; do
    snapshot a
    nsenter --target "${pid1[$n]}" --pid sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do /bin/true; done'
    snapshot b
    got=$((b_pid[$n] - a_pid[$n] - 1))
    echo "self-test $n: sh running 20 x /bin/true counted $got processes (want 21)"
    [ "$got" = 21 ] || bad=1
  done
  exit "$bad"
fi

out_dir=$(mktemp -d /tmp/probe-cost.XXXXXX)
results=$out_dir/results.tsv
for ((run = 1; run <= runs; run++)); do
  snapshot a
  t0=$(now_us)
  run_command
  t1=$(now_us)
  snapshot b
  declare -A cmd_cpu=() cmd_pid=()
  for n in "${nodes[@]}"; do
    cmd_cpu[$n]=$((b_cpu[$n] - a_cpu[$n]))
    cmd_pid[$n]=$((b_pid[$n] - a_pid[$n] - 1))
  done
  # The idle stretch, as long as the command took.
  snapshot a
  sleep "$(printf '%d.%06d' $(((t1 - t0) / 1000000)) $(((t1 - t0) % 1000000)))"
  snapshot b
  for n in "${nodes[@]}"; do
    printf '%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n' "$run" "$n" "${os[$n]}" $(((t1 - t0) / 1000)) \
      "${cmd_cpu[$n]}" "${cmd_pid[$n]}" $((b_cpu[$n] - a_cpu[$n])) $((b_pid[$n] - a_pid[$n] - 1)) >>"$results"
  done
done

echo "lab $name, $what, $runs run(s); details in $out_dir"
printf '%-10s %-13s %9s %9s %9s %7s %7s %7s\n' node os "cpu_ms" "idle_ms" "net_ms" procs "idle" "net"
for n in "${nodes[@]}"; do
  # Medians over the runs of each column (idle subtracted in net_*).
  awk -F'\t' -v n="$n" '$2 == n { print $5, $7, $5 - $7, $6, $8, $6 - $8 }' "$results" |
    awk -v n="$n" -v o="${os[$n]}" '
      { for (i = 1; i <= 6; i++) v[i, NR] = $i }
      END {
        for (i = 1; i <= 6; i++) {
          m = 0
          for (j = 1; j <= NR; j++) s[j] = v[i, j]
          for (j = 1; j <= NR; j++) for (k = j + 1; k <= NR; k++) if (s[k] < s[j]) { t = s[j]; s[j] = s[k]; s[k] = t }
          med[i] = NR % 2 ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2
        }
        printf "%-10s %-13s %9.1f %9.1f %9.1f %7d %7d %7d\n", n, o, med[1] / 1000, med[2] / 1000, med[3] / 1000, med[4], med[5], med[6]
      }'
done
printf 'wall time of the command (ms), per run: %s\n' "$(awk -F'\t' '!seen[$1]++ { printf "%s ", $4 }' "$results")"
