#!/usr/bin/env bash
# The demo: build gpuctl, then take two labs of fake GPU nodes from bare
# nodes to working clusters (Kubernetes with the GPU Operator, then Slurm):
# plan -> apply -> check -> check --deep -> apply again (which must change
# nothing), and say where everything was written. Needs root (namespaces).
# The workers are reached as cloud images are, through a real sudo (lab up
# --sudo-users): worker1 as `ubuntu` (NOPASSWD), the Rocky worker2 as `rocky`
# with a sudo password, which gpuctl reads from GPUCTL_LAB_SUDO_PASSWORD.
# GPUCTL_DEMO_SLURM=0 skips the Slurm lab.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${GPUCTL_DEMO_LAB:-demo}
profile=${GPUCTL_DEMO_PROFILE:-mixed}

bash scripts/install-deps.sh all
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)"
gpuctl=$PWD/build/release/gpuctl

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# One line per node: the user gpuctl logs in as, and how it becomes root
# (from the lab's STATE/users.tsv; nodes not listed are reached as root).
logins() {
  local state=$1 node user sudo n u s
  while IFS=$'\t' read -r node _; do
    user=root sudo=""
    while IFS=$'\t' read -r n u s; do
      [ "$n" = "$node" ] && user=$u sudo=$s
    done <"$state/users.tsv"
    case $sudo in
      nopasswd) printf '  %-9s ssh as %-7s real sudo, NOPASSWD rule\n' "$node" "$user" ;;
      password) printf '  %-9s ssh as %-7s real sudo, asks for the password (from %s)\n' "$node" "$user" \
        "\$GPUCTL_LAB_SUDO_PASSWORD" ;;
      *) printf '  %-9s ssh as %-7s no sudo needed\n' "$node" "$user" ;;
    esac
  done <"$state/nodes.tsv"
}

# demo LAB PROFILE: one lab from bare nodes to a working cluster:
# plan -> apply -> check -> check --deep -> apply again (nothing to change).
# Output of each stage goes to <lab state>/demo/<stage>.txt.
demo() {
  local lab=$1 profile=$2
  step "lab $lab (profile $profile): starting the fake nodes"
  "$gpuctl" lab up --name "$lab" --profile "$profile" --sudo-users
  # LAB_* paths, and `export GPUCTL_LAB_SUDO_PASSWORD=...` from the lab's
  # state (the inventory names the variable, never the password).
  eval "$("$gpuctl" lab env --name "$lab" --sudo-password)"
  local inventory=$LAB_INVENTORY logs=$LAB_STATE/demo
  rm -rf "$logs" && mkdir -p "$logs"
  step "$lab: who gpuctl logs in as"
  logins "$LAB_STATE" | tee "$logs/logins.txt"
  # Runs gpuctl, keeps its output in $logs/<label>.txt, records the exit status.
  run() {
    local label=$1; shift
    set +e
    "$gpuctl" "$@" 2>&1 | tee "$logs/$label.txt"
    local rc=${PIPESTATUS[0]}
    set -e
    echo "$label exit=$rc" >>"$logs/exit-codes.txt"
  }
  step "$lab: gpuctl plan (read-only: shows what apply would change)"
  run plan plan "$inventory" --out "$logs/plan.json"
  step "$lab: gpuctl apply --yes"
  run apply apply --yes "$inventory" --run-dir "$logs/apply-1"
  step "$lab: gpuctl check"
  run check check "$inventory"
  step "$lab: gpuctl check --deep (GPU pod, NCCL across nodes, IB pairs)"
  run check-deep check --deep "$inventory"
  step "$lab: gpuctl apply --yes, again (a converged cluster: nothing to change)"
  run apply-again apply --yes "$inventory" --run-dir "$logs/apply-2"
  summaries+=("$lab ($profile)|$logs|$inventory")
}

summaries=()
demo "$name" "$profile"
if [ "${GPUCTL_DEMO_SLURM:-1}" = 1 ]; then
  demo "$name-slurm" slurm
fi

step "summary"
for entry in "${summaries[@]}"; do
  IFS='|' read -r title logs inventory <<<"$entry"
  printf '\n%s\n' "$title"
  # One line per stage: its exit status and the last summary line it printed.
  for label in plan apply check check-deep apply-again; do
    rc=$(sed -n "s/^$label exit=//p" "$logs/exit-codes.txt")
    said=$(grep -h '^Plan:\|^Check:\|^No changes\|^Apply' "$logs/$label.txt" | tail -n 1)
    printf '  %-12s exit %-3s %s\n' "$label" "$rc" "$said"
  done
  printf '  logins:\n'
  cat "$logs/logins.txt"
  printf '  results:   %s/  (plan.txt, plan.json, apply.txt, check.txt, check-deep.txt, apply-again.txt)\n' "$logs"
  printf '  journals:  %s/apply-1/journal.jsonl, %s/apply-2/journal.jsonl\n' "$logs" "$logs"
  printf '  inventory: %s\n' "$inventory"
done
cat <<MSG

The labs are still up: try '$gpuctl plan <inventory>' or '$gpuctl lab ssh master1 --name $name';
'$gpuctl lab down --name $name' (and --name $name-slurm) removes them.
MSG
