#!/usr/bin/env bash
# Speed and memory of gpuctl against its peer (Ansible, from Debian) and the
# floor (one raw ssh per node; pdsh), on the same lab nodes in the same run.
# Figures are printed, never asserted. Needs root (the lab).
#
#   scripts/bench.sh [N ...]      node counts (default: 10 30)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(10 30)

bash scripts/install-deps.sh all
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
gpuctl=$PWD/build/release/gpuctl
work=$(mktemp -d /tmp/gpuctl-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The same five read-only probes for every tool.
probes=(
  "test -f /etc/modules-load.d/gpuctl-k8s.conf"
  "grep -q 1 /proc/sys/net/ipv4/ip_forward"
  "test \$(tail -n +2 /proc/swaps | wc -l) -eq 0"
  "dpkg-query -W -f='\${Status}' openssh-server | grep -q installed"
  "test -d /etc/modprobe.d"
)

# A five-step catalog whose probes are exactly those, for gpuctl.
mkdir -p "$work/playbooks"
{
  echo "steps:"
  for i in "${!probes[@]}"; do
    cat <<STEP
  - id: bench.p$i
    description: benchmark probe $i
    roles: [master, worker, storage]
    probe: |
      ${probes[$i]} || exit 1
    change:
      any: |
        true
STEP
  done
} >"$work/playbooks/10-bench.yaml"

# Wall-clock seconds and peak RSS (MiB) of a command, from GNU time's format.
measure() {
  local out=$work/time.txt
  /usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>&1 || true
  # GNU time puts "Command exited with non-zero status N" first when it does.
  tail -n 1 "$out" | awk '{ printf "%6.2f s %7.1f MiB", $1, $2 / 1024 }'
}

printf '\n%-6s %-40s %s\n' nodes tool "wall / peak RSS"
for n in "${counts[@]}"; do
  name=bench$n
  "$gpuctl" lab up --name "$name" --nodes "$n" >"$work/lab-$name.log" 2>&1
  eval "$("$gpuctl" lab env --name "$name")"
  mapfile -t addrs < <(awk '/^ *address:/ { print $2 }' "$LAB_INVENTORY")
  ssh_opts=(-i "$LAB_KEY" -o UserKnownHostsFile="$LAB_KNOWN_HOSTS" -o StrictHostKeyChecking=yes
            -o BatchMode=yes -o LogLevel=ERROR)
  joined=$(printf '%s; ' "${probes[@]}")

  # Floor: one plain ssh per node, all five probes in it, all nodes at once.
  # shellcheck disable=SC2029 # the probes' text, for the node's shell to run
  floor() { for a in "${addrs[@]}"; do ssh "${ssh_opts[@]}" "root@$a" "$joined" & done; wait; }
  printf '%-6s %-40s %s\n' "$n" "ssh, one per node (floor)" "$(measure bash -c "$(declare -p addrs ssh_opts joined probes); $(declare -f floor); floor")"

  hosts=$(IFS=,; echo "${addrs[*]}")
  printf '%-6s %-40s %s\n' "$n" "pdsh -R ssh" "$(PDSH_SSH_ARGS_APPEND="${ssh_opts[*]}" measure pdsh -R ssh -f 64 -l root -w "$hosts" "$joined")"

  # Peer: Ansible, five tasks, no fact gathering, 64 forks.
  {
    echo "[lab]"
    printf '%s\n' "${addrs[@]}"
  } >"$work/hosts.ini"
  {
    echo "- hosts: lab"
    echo "  gather_facts: false"
    echo "  tasks:"
    for i in "${!probes[@]}"; do
      printf '    - name: p%s\n      shell: %q\n      changed_when: false\n' "$i" "${probes[$i]}"
    done
  } >"$work/play.yaml"
  export ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_SSH_ARGS="-o UserKnownHostsFile=$LAB_KNOWN_HOSTS -o ControlMaster=auto -o ControlPersist=60s"
  printf '%-6s %-40s %s\n' "$n" "ansible-playbook, 5 tasks, no facts" \
    "$(measure ansible-playbook -i "$work/hosts.ini" -u root --private-key "$LAB_KEY" -f 64 "$work/play.yaml")"

  printf '%-6s %-40s %s\n' "$n" "gpuctl plan, 5 steps" \
    "$(GPUCTL_PLAYBOOKS=$work/playbooks measure "$gpuctl" plan "$LAB_INVENTORY")"
  printf '%-6s %-40s %s\n' "$n" "gpuctl plan, shipped catalog" "$(measure "$gpuctl" plan "$LAB_INVENTORY")"

  "$gpuctl" lab down --name "$name" --purge >/dev/null 2>&1
done
