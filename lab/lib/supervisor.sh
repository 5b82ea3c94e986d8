#!/bin/bash
# The power supply of one lab node: boots it, waits for its PID 1 to end,
# and boots it again on the same disk when it was a reboot.
#
#   supervisor.sh STATE_DIR NODE        (started detached by gpuctl-lab)
#
# How a boot ended is read from the exit status of `unshare --fork`, which
# dies of the signal its child (the node's PID 1) died of. For a pid
# namespace's init the kernel reports reboot(2) as SIGHUP and power-off/halt
# as SIGINT:
#   129 (SIGHUP)   `systemctl reboot` in the node   -> boot again
#   130 (SIGINT)   `systemctl poweroff` in the node -> stay off
#   other          `gpuctl-lab stop` (power file says off) -> stay off;
#                  `gpuctl-lab reboot --hard` (reset file) -> boot again;
#                  else the boot failed -> boot again, give up after 3 quick failures
# Files in the node's state directory: power (on|off, the wish), state
# (booting|down|failed, the supervisor's view), boots, booted_at, last_exit,
# unshare.pid, supervisor.pid, boot.env, console.log (the node's console).
set -uo pipefail

# A supervisor lives as long as its node: it must not keep any descriptor the
# command that started the lab had open (a caller's `flock FILE gpuctl-lab up`
# lock would otherwise stay held until the lab is down).
for _fd in "/proc/$$/fd"/*; do
  _fd=${_fd##*/}
  if [ "$_fd" -gt 2 ] 2>/dev/null; then eval "exec $_fd>&-"; fi
done
unset _fd

LAB_LIB=$(dirname "$(realpath "$0")")
# shellcheck source=common.sh
. "$LAB_LIB/common.sh"

LAB_STATE=$1
node=$2
LAB_NAME=$(cat "$LAB_STATE/name")
lab_names
d=$(node_dir "$node")
ns=$(node_netns "$node")

echo $$ >"$d/supervisor.pid"
say() { printf '%s supervisor: %s\n' "$(date '+%F %T')" "$*" >>"$d/supervisor.log"; }

# Removes the cgroups the node's systemd left behind (children first).
cgroup_clean() {
  [ -n "$LAB_CGROUP" ] && [ -d "$LAB_CGROUP/$node" ] || return 0
  find "$LAB_CGROUP/$node" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
}

quick_failures=0
while [ "$(read_file "$d/power" on)" = on ]; do
  boots=$(($(read_file "$d/boots" 0) + 1))
  echo "$boots" >"$d/boots"
  cat >"$d/boot.env" <<EOF
NODE=$node
LAB_NAME=$LAB_NAME
BOOT=$boots
BOOT_ID=$(cat /proc/sys/kernel/random/uuid)
UPPER=$d/upper
WORK=$d/work
BASE=$LAB_STATE/base-$(cat "$d/os")
DEVSKEL=$LAB_STATE/dev
MERGED=$d/merged
NFS_STORE=$LAB_STATE/nfs
IB_FABRIC=$LAB_STATE/ib-fabric
HIDE="$(dirname "$LAB_STATE")"
EOF
  # Keep the console log small: start afresh past 1 MiB.
  if [ "$(stat -c %s "$d/console.log" 2>/dev/null || echo 0)" -gt 1048576 ]; then
    mv -f "$d/console.log" "$d/console.log.old"
  fi
  echo booting >"$d/state"
  date +%s >"$d/booted_at"
  started=$(now_ms)
  cgroup_clean
  say "boot $boots"
  (
    if [ -n "$LAB_CGROUP" ]; then
      mkdir -p "$LAB_CGROUP/$node"
      echo "$BASHPID" >"$LAB_CGROUP/$node/cgroup.procs"
      exec ip netns exec "$ns" unshare --mount --uts --ipc --pid --cgroup --fork --kill-child \
        "$LAB_LIB/node-init.sh" "$d"
    fi
    exec ip netns exec "$ns" unshare --mount --uts --ipc --pid --fork --kill-child \
      "$LAB_LIB/node-init.sh" "$d"
  ) </dev/null >>"$d/console.log" 2>&1 &
  upid=$!
  echo "$upid" >"$d/unshare.pid"
  # (bash would log "Hangup" etc. for a job that died of a signal)
  { wait "$upid"; } 2>/dev/null
  rc=$?
  rm -f "$d/unshare.pid"
  echo down >"$d/state"
  cgroup_clean
  case $rc in
    129) reason=reboot ;;
    130) reason=poweroff ;;
    *)
      # A PID 1 killed with SIGKILL makes unshare exit 1 ("sigprocmask
      # unblock failed"), so gpuctl-lab says when it did that on purpose.
      if [ "$(read_file "$d/power" on)" = off ]; then
        reason="powered off"
      elif [ -e "$d/reset" ]; then
        reason=reset
      else
        reason="failed (exit $rc)"
      fi
      ;;
  esac
  rm -f "$d/reset"
  echo "$reason" >"$d/last_exit"
  say "boot $boots ended: $reason after $((($(now_ms) - started) / 1000)) s"
  case $reason in
    poweroff) echo off >"$d/power" ;;
    failed*)
      if (($(now_ms) - started < 10000)); then
        quick_failures=$((quick_failures + 1))
      else
        quick_failures=0
      fi
      if ((quick_failures >= 3)); then
        echo failed >"$d/state"
        say "3 quick boot failures; giving up (see console.log)"
        break
      fi
      sleep 1
      ;;
    *) quick_failures=0 ;;
  esac
done
rm -f "$d/supervisor.pid"
say "exit"
