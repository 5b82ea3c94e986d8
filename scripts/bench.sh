#!/usr/bin/env bash
# Speed and memory of gpuctl beside its peer (Ansible, from Debian) and the
# floor (one plain ssh per node; pdsh), on the same lab nodes in the same
# run, then how planning and apply scheduling grow to 10,000 nodes. Figures
# are printed, never asserted (docs/benchmark.md has the latest run). Root.
#
#   scripts/bench.sh [--runs R] [N ...]    lab sizes (default: 10 50 100), R runs each (3)
#   scripts/bench.sh --scale-only           only the 1,000/10,000-node part (no lab)
#
# Every figure is the whole process (GNU time): min and median wall time of
# R runs, and the median peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
counts=()
scale_only=false
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --scale-only) scale_only=true; shift ;;
    *) counts+=("$1"); shift ;;
  esac
done
[ ${#counts[@]} -gt 0 ] || counts=(10 50 100)

bash scripts/install-deps.sh all
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" --target gpuctl gpuctl-bench-scale >/dev/null
gpuctl=$PWD/build/release/gpuctl
scale=$PWD/build/release/bench/gpuctl-bench-scale
work=$(mktemp -d /tmp/gpuctl-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Runs a command R times; prints "min / median wall, median peak RSS".
measure() {
  local i out=$work/time.txt
  : >"$work/walls"
  : >"$work/rss"
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>&1 || true
    # GNU time puts "Command exited with non-zero status N" first when it does.
    tail -n 1 "$out" | awk '{ print $1 >> "'"$work/walls"'"; print $2 >> "'"$work/rss"'" }'
  done
  paste <(sort -n "$work/walls") <(sort -n "$work/rss") | awk '
    { w[NR] = $1; r[NR] = $2 }
    END { m = int((NR + 1) / 2); printf "%6.2f / %6.2f s  %7.1f MiB", w[1], w[m], r[m] / 1024 }'
}
row() { printf '%-6s %-44s %s\n' "$1" "$2" "$3"; }

scale_part() {
  echo
  echo "== Planning and apply scheduling at scale (fake transport: nodes answer at once)"
  for n in 1000 10000; do
    bash scripts/gen-inventory.sh "$n" >"$work/inv$n.yaml"
    "$scale" plan "$work/inv$n.yaml"
    "$scale" apply "$work/inv$n.yaml"
  done
  echo
  echo "== gpuctl plan on generated inventories whose nodes are unreachable (whole process)"
  for n in 1000 10000; do
    row "$n" "gpuctl plan, every node unreachable" "$(runs=1 measure "$gpuctl" plan "$work/inv$n.yaml")"
  done
}

if $scale_only; then
  scale_part
  exit 0
fi

# Five read-only probes, and the change that makes each true; every tool
# runs exactly these. On a lab node the first two start false.
probes=(
  "test -f /etc/modules-load.d/gpuctl-bench.conf"
  "grep -qx 1 /proc/sys/net/ipv4/ip_forward"
  "test \$(tail -n +2 /proc/swaps | wc -l) -eq 0"
  "dpkg-query -W -f='\${Status}' openssh-server | grep -q 'ok installed'"
  "test -d /etc/modprobe.d"
)
changes=(
  "mkdir -p /etc/modules-load.d && echo br_netfilter >/etc/modules-load.d/gpuctl-bench.conf"
  "sysctl -qw net.ipv4.ip_forward=1"
  "swapoff -a"
  "apt-get install -y -q openssh-server"
  "mkdir -p /etc/modprobe.d"
)

# The same five as gpuctl steps (plan, check and apply read them).
mkdir -p "$work/playbooks"
{
  echo "steps:"
  for i in "${!probes[@]}"; do
    printf '  - id: bench.p%s\n    description: benchmark step %s\n' "$i" "$i"
    printf '    roles: [master, worker, storage]\n'
    printf '    probe: |\n      %s || exit 1\n' "${probes[$i]}"
    printf '    change:\n      any: |\n        %s\n' "${changes[$i]}"
  done
} >"$work/playbooks/10-bench.yaml"

# ... and as Ansible tasks: a read-only play, and a play that changes what
# its probe finds false (reporting a change only then).
ansible_play() {  # ansible_play apply|probe: prints the play
  echo "- hosts: lab"
  echo "  gather_facts: false"
  echo "  tasks:"
  for i in "${!probes[@]}"; do
    if [ "$1" = apply ]; then
      printf '    - name: p%s\n      shell: %q\n      register: r\n      changed_when: r.stdout == "changed"\n' \
        "$i" "${probes[$i]} || { ${changes[$i]} >/dev/null && echo changed; }"
    else
      printf '    - name: p%s\n      shell: %q\n      changed_when: false\n' "$i" "${probes[$i]}"
    fi
  done
}
ansible_play probe >"$work/probe.yaml"
ansible_play apply >"$work/apply.yaml"

echo "Each figure: min / median wall of $runs runs, and the median peak RSS of the measured process."
for n in "${counts[@]}"; do
  name=bench$n
  echo
  echo "== $n lab nodes"
  "$gpuctl" lab down --name "$name" --purge >/dev/null 2>&1 || true
  "$gpuctl" lab up --name "$name" --nodes "$n" >"$work/lab-$name.log" 2>&1
  eval "$("$gpuctl" lab env --name "$name")"
  mapfile -t addrs < <(awk '/^ *address:/ { print $2 }' "$LAB_INVENTORY")
  ssh_opts=(-i "$LAB_KEY" -o UserKnownHostsFile="$LAB_KNOWN_HOSTS" -o StrictHostKeyChecking=yes
            -o BatchMode=yes -o LogLevel=ERROR)
  joined=$(printf '%s; ' "${probes[@]}")
  printf '[lab]\n%s\n' "${addrs[@]}" >"$work/hosts.ini"
  export ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_SSH_ARGS="-o UserKnownHostsFile=$LAB_KNOWN_HOSTS -o ControlMaster=auto -o ControlPersist=60s"
  ansible=(ansible-playbook -i "$work/hosts.ini" -u root --private-key "$LAB_KEY" -f 64)

  # Read-only: the floor, pdsh, Ansible and gpuctl, five probes on every node.
  # shellcheck disable=SC2029 # the probes' text, for the node's shell to run
  floor() { for a in "${addrs[@]}"; do ssh "${ssh_opts[@]}" "root@$a" "$joined" & done; wait; }
  row "$n" "probe: ssh, one per node (floor)" \
    "$(measure bash -c "$(declare -p addrs ssh_opts joined); $(declare -f floor); floor")"
  row "$n" "probe: pdsh -R ssh" \
    "$(PDSH_SSH_ARGS_APPEND="${ssh_opts[*]}" measure pdsh -R ssh -f 64 -l root -w "$(IFS=,; echo "${addrs[*]}")" "$joined")"
  row "$n" "probe: ansible-playbook, 5 tasks, no facts" "$(measure "${ansible[@]}" "$work/probe.yaml")"
  row "$n" "plan: gpuctl, 5 steps" "$(GPUCTL_PLAYBOOKS=$work/playbooks measure "$gpuctl" plan "$LAB_INVENTORY")"
  row "$n" "plan: gpuctl, shipped catalog (fresh nodes)" "$(measure "$gpuctl" plan "$LAB_INVENTORY")"

  # Converge once with each tool's own run, then measure what a second run
  # costs when nothing is left to change, and a check.
  GPUCTL_PLAYBOOKS=$work/playbooks "$gpuctl" apply --yes "$LAB_INVENTORY" >"$work/apply-$name.log" 2>&1
  "${ansible[@]}" "$work/apply.yaml" >/dev/null 2>&1 || true
  if ! GPUCTL_PLAYBOOKS=$work/playbooks "$gpuctl" plan "$LAB_INVENTORY" >/dev/null 2>&1; then
    echo "warning: the nodes did not converge; the no-op figures below are not no-ops" >&2
  fi
  row "$n" "no-op apply: ansible-playbook, 5 tasks" "$(measure "${ansible[@]}" "$work/apply.yaml")"
  row "$n" "no-op apply: gpuctl apply --yes, 5 steps" \
    "$(GPUCTL_PLAYBOOKS=$work/playbooks measure "$gpuctl" apply --yes "$LAB_INVENTORY")"
  # No Ansible row: --check skips shell tasks, so it would not do this work.
  row "$n" "check: gpuctl check, 5 steps" "$(GPUCTL_PLAYBOOKS=$work/playbooks measure "$gpuctl" check "$LAB_INVENTORY")"

  "$gpuctl" lab down --name "$name" --purge >/dev/null 2>&1
done

scale_part
