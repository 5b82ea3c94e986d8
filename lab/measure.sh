#!/bin/bash
# Measures the lab: bring-up time and memory per node, for docs/lab.md.
#   lab/measure.sh N [NAME]     (default NAME: measure; the lab is downed after)
# Memory: MemAvailable before `up` and 20 s after it (page cache and tmpfs
# included), and the sum of the nodes' processes' PSS (shared pages counted
# once), both divided by N. CPU: the nodes' cgroup CPU time for the boot.
set -euo pipefail
n=${1:?usage: $0 N [NAME]}
name=${2:-measure}
lab=$(dirname "$(realpath "$0")")/gpuctl-lab

mem_available() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }

"$lab" down --name "$name" --purge >/dev/null 2>&1 || true
before=$(mem_available)
load=$(cut -d' ' -f1 /proc/loadavg)
"$lab" up --name "$name" --nodes "$n" 2>&1 | grep -E 'is up|error'
eval "$("$lab" env --name "$name")"
sleep 20
after=$(mem_available)
pss=0
for f in /proc/[0-9]*/cgroup; do
  grep -qs "^0::/gpuctl-lab/$name/" "$f" || continue
  pid=${f#/proc/}
  pid=${pid%/cgroup}
  kb=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
  pss=$((pss + ${kb:-0}))
done
cpu=$(cat "$LAB_CGROUP"/*/cpu.stat | awk '/^usage_usec/ { s += $2 } END { print int(s / 1000) }')
printf 'nodes %d (load before %s)\n' "$n" "$load"
printf 'MemAvailable drop: %d MiB total, %.1f MiB per node\n' $(((before - after) / 1024)) \
  "$(echo "$before $after $n" | awk '{ print ($1 - $2) / 1024 / $3 }')"
printf 'PSS of node processes: %d MiB total, %.1f MiB per node\n' $((pss / 1024)) \
  "$(echo "$pss $n" | awk '{ print $1 / 1024 / $2 }')"
printf 'CPU of the nodes (boot): %d ms total, %d ms per node\n' "$cpu" $((cpu / n))
"$lab" down --name "$name" --purge >/dev/null
