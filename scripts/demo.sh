#!/usr/bin/env bash
# The demo: build gpuctl, bring up a lab of fake GPU nodes, then
# plan -> apply -> check -> apply again (which must change nothing), and say
# where everything was written. Needs root (the lab uses namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${GPUCTL_DEMO_LAB:-demo}
profile=${GPUCTL_DEMO_PROFILE:-mixed}

bash scripts/install-deps.sh all
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)"
gpuctl=$PWD/build/release/gpuctl

"$gpuctl" lab up --name "$name" --profile "$profile"
eval "$("$gpuctl" lab env --name "$name")"
state=$LAB_STATE
inventory=$LAB_INVENTORY
logs=$state/demo
rm -rf "$logs" && mkdir -p "$logs"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Runs gpuctl, keeps its output in $logs/<name>.txt, and records the exit status.
run() {
  local label=$1; shift
  set +e
  "$gpuctl" "$@" 2>&1 | tee "$logs/$label.txt"
  local rc=${PIPESTATUS[0]}
  set -e
  echo "$label exit=$rc" >>"$logs/exit-codes.txt"
  return 0
}

step "gpuctl plan (read-only: shows what apply would change)"
run plan plan "$inventory" --out "$logs/plan.json"
step "gpuctl apply --yes"
run apply apply --yes "$inventory" --run-dir "$logs/apply-1"
step "gpuctl check"
run check check "$inventory"
step "gpuctl apply --yes, again (a converged cluster: nothing to change)"
run apply-again apply --yes "$inventory" --run-dir "$logs/apply-2"

step "summary"
# One line per stage: its exit status and the last summary line it printed.
for label in plan apply check apply-again; do
  rc=$(sed -n "s/^$label exit=//p" "$logs/exit-codes.txt")
  said=$(grep -h '^Plan:\|^Check:\|^No changes' "$logs/$label.txt" | tail -n 1)
  printf '%-12s exit %-3s %s\n' "$label" "$rc" "$said"
done
cat <<MSG

Results:   $logs/  (plan.txt, plan.json, apply.txt, check.txt, apply-again.txt)
Journals:  $logs/apply-1/journal.jsonl, $logs/apply-2/journal.jsonl
Inventory: $inventory
The lab is still up: try '$gpuctl plan $inventory' or '$gpuctl lab ssh master1 --name $name';
'$gpuctl lab down --name $name' removes it.
MSG
