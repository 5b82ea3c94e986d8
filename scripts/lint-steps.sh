#!/usr/bin/env bash
# The step catalog linted as code. `gpuctl catalog --scripts` writes every
# step script as a file that sources the prelude and its step's common:, as a
# node runs them; shellcheck checks those, the prelude, and the shell under
# lab/ and scripts/; the duplicate finder then shows whether a step's probe,
# changes and verify still copy each other instead of sharing a common:.
# Usage: scripts/lint-steps.sh [GPUCTL]   (default: build/release/gpuctl)
set -euo pipefail
cd "$(dirname "$0")/.."
gpuctl=${1:-build/release/gpuctl}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
steps=$work/steps
"$gpuctl" --playbooks playbooks catalog --scripts "$steps"

# Plain files only: a link runs exactly what its target runs (a YAML anchor
# shares scripts between steps), so it is checked once. The prelude's copy is
# checked as playbooks/prelude.sh, where its lines are.
mapfile -t step_files < <(find "$steps" -type f -name '*.sh' ! -name prelude.sh | sort)

# The repository's own shell: every tracked *.sh, and every tracked file whose
# first line runs sh or bash. The *.sh under lab/standins/ outside a package's
# root/ are descriptors, not programs: build-repo.sh sources each (bash) and
# reads the PKG_* and release variables it sets, so "unused" (SC2034) is what
# they are for.
mapfile -t descriptors < <(git ls-files 'lab/standins/*.sh' | grep -v '/root/')
mapfile -t repo_files < <(git ls-files lab scripts | while IFS= read -r f; do
  case "$f" in
    *.sh) echo "$f" ;;
    *) head -n 1 "$f" | grep -Eq '^#!(/usr/bin/env |/bin/)(ba|da)?sh' && echo "$f" ;;
  esac
done | grep -vxF -f <(printf '%s\n' "${descriptors[@]}"))

echo "== shellcheck: ${#step_files[@]} step scripts, the prelude, ${#repo_files[@]} files of lab/ and scripts/, ${#descriptors[@]} stand-in descriptors"
# Following the sourced prelude costs about half a second a script: the step
# scripts go through every core, and only the files with findings are
# checked again for the readable report.
found=$(printf '%s\0' "${step_files[@]}" |
  xargs -0 -P "$(nproc)" -n 8 shellcheck -x -f gcc | cut -d: -f1 | sort -u) || true
status=0
if [ -n "$found" ]; then
  mapfile -t again <<<"$found"
  shellcheck -x "${again[@]}" || true
  status=1
fi
shellcheck -x --shell=sh playbooks/prelude.sh || status=1
shellcheck -x "${repo_files[@]}" || status=1
shellcheck -x --shell=bash --exclude=SC2034 "${descriptors[@]}" || status=1
if [ "$status" -ne 0 ]; then
  echo "lint-steps: shellcheck found the above: fix each, or disable it inline with the reason" >&2
  exit 1
fi

echo "== duplicates: copies among the step scripts"
if ! command -v duplicates >/dev/null 2>&1; then
  echo "lint-steps: 'duplicates' is not on this machine; the copy check is skipped"
  exit 0
fi
report=$(duplicates --repo "$steps" --most 200)
printf '%s\n' "$report"
# A pair inside one step (its probe and its change, say) is what common: is
# for, and fails; pairs across steps are shown, and left to judgement.
step_of() { sed -E 's/\.(probe|change-(apt|dnf|any)|verify|common|input\.[a-z0-9_]+)\.sh:[0-9-]+$//' <<<"$1"; }
within=0
while read -r _ a _ b _; do
  if [ "$(step_of "$a")" = "$(step_of "$b")" ]; then
    echo "lint-steps: $a and $b copy each other: move what they share into the step's common:" >&2
    within=$((within + 1))
  fi
done < <(printf '%s\n' "$report" | grep -E '^D[0-9]+ ' || true)
[ "$within" -eq 0 ] || exit 1
echo "== lint-steps: clean"
