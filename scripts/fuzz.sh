#!/usr/bin/env bash
# A bounded libFuzzer run over gpuctl's loaders and parsers (tests/fuzz/):
# builds build/fuzz with clang (-DGPUCTL_FUZZ=ON: libFuzzer, ASan, UBSan),
# then runs each target for a fixed time on a copy of its seed corpus, so a
# run never changes the repository. Fails on any crash, leak, timeout or
# broken promise, naming the input that reproduces it. A libFuzzer process
# uses one core: the targets run side by side, one per core ($FUZZ_JOBS,
# default nproc), each still for its full time.
#
# Usage: scripts/fuzz.sh [--seconds N] [--merge] [TARGET...]
#   --seconds N  fuzzing time per target (default 12, or $FUZZ_SECONDS)
#   --merge      for developers, not CI: afterwards, add the inputs that
#                reached new code to tests/fuzz/corpus/TARGET (libFuzzer's
#                -merge keeps only those), to be reviewed and committed
#   TARGET       inventory playbook os_release probe_output batch_script
#                values saved_plan journal (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-12}
merge=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(inventory playbook os_release probe_output batch_script values saved_plan journal)
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${all[@]}")
fi

# The largest input each target is given. Bigger inputs find nothing new in
# these parsers (they are line or key based) and only slow every run down:
# a loader's time grows with its input, and a 1 MB playbook that takes a
# second to parse would read as a hang, not a bug. Each bound is above the
# largest real file of its kind in the seed corpus.
max_len() {
  case "$1" in
    values) echo 256 ;;
    os_release) echo 2048 ;;
    inventory) echo 4096 ;;
    playbook) echo 8192 ;;
    *) echo 6144 ;;
  esac
}

build=build/fuzz
echo "== fuzz: build ($build, clang)"
# Warnings are the default (GCC) build's job; clang warns about other things,
# and one of those should not fail the fuzzing.
# -g1 (line tables only) keeps file:line in every crash report and builds
# faster than full debug information.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" -DGPUCTL_FUZZ=ON -DBUILD_TESTING=OFF \
  -DGPUCTL_WERROR=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target gpuctl_fuzzers

run=$build/run
rm -rf "$run"
for target in "${targets[@]}"; do
  if [ ! -x "$build/tests/fuzz/fuzz_$target" ] || [ ! -d "tests/fuzz/corpus/$target" ]; then
    echo "fuzz.sh: no target '$target' (known: ${all[*]})" >&2
    exit 2
  fi
done

# Fuzzes one target; its verdict goes to $run/TARGET/status (ok or failed),
# its output to $run/TARGET/fuzz.log and $run/TARGET/summary.
fuzz_one() {
  local target=$1
  local binary=$build/tests/fuzz/fuzz_$target
  local seeds=tests/fuzz/corpus/$target
  local corpus=$run/$target/corpus
  local artifacts=$run/$target/artifacts
  local log=$run/$target/fuzz.log
  local summary=$run/$target/summary
  mkdir -p "$corpus" "$artifacts"
  cp -R "$seeds/." "$corpus/"
  local args=(-max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout=10
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [ -f "tests/fuzz/$target.dict" ]; then
    args+=(-dict="tests/fuzz/$target.dict")
  fi
  # libFuzzer's own exit status is non-zero on a crash, leak, timeout or
  # out-of-memory; it writes the input to the artifact prefix first.
  if "$binary" "${args[@]}" "$corpus" >"$log" 2>&1; then
    echo "== fuzz: $target ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      grep -o '[0-9]*$') runs in ${seconds}s)" >"$summary"
    echo ok >"$run/$target/status"
  else
    {
      echo "== fuzz: $target FAILED; the end of $log:"
      tail -n 40 "$log"
      for input in "$artifacts"/*; do
        [ -e "$input" ] || continue
        echo "fuzz.sh: reproduce with: $binary $input"
      done
    } >"$summary"
    echo failed >"$run/$target/status"
  fi
  if [ "$merge" -eq 1 ]; then
    "$binary" -merge=1 -max_len="$(max_len "$target")" "$seeds" "$corpus" >>"$log" 2>&1
    echo "== fuzz: $target merged; new seeds: $(git status --porcelain -- "$seeds" | wc -l)" \
      >>"$summary"
  fi
}

jobs=${FUZZ_JOBS:-$(nproc)}
running=0
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=()
for target in "${targets[@]}"; do
  cat "$run/$target/summary" 2>/dev/null || echo "== fuzz: $target FAILED before it ran"
  if [ "$(cat "$run/$target/status" 2>/dev/null)" != ok ]; then
    failed+=("$target")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "== fuzz: all ${#targets[@]} targets ok"
