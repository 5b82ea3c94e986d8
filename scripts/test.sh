#!/usr/bin/env bash
# Every test gpuctl has: installs what it needs, builds Release (gpuctl and
# the lab tests), an ASan/UBSan build of gpuctl and the unit tests and a
# ThreadSanitizer build of those that run threads, runs the unit tests under
# both sanitizers, fuzzes the loaders and parsers for a bounded time
# (scripts/fuzz.sh) and runs the lab tests on Release.
# Lab tests need root and network namespaces; elsewhere they skip and say why.
#
# The unit tests run on the sanitizer builds only: a Release build of them
# (half the Release build's time) would run the same code without the
# checks. The lab tests run on Release, as an admin runs gpuctl.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# Each stage's line carries the time of day, so a CI log shows where the
# minutes go.
stage() { echo "== $(date +%T) $*"; }

bash scripts/install-deps.sh all
mkdir -p build

stage "format check"
git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run --Werror

stage "build: release (the lab's package repositories beside it: build/lab-repo.log)"
# The repositories need no gpuctl: they build while gpuctl compiles, instead
# of inside the first lab test (a few minutes of dpkg-deb, rpmbuild and gpg).
# Not fatal here: the first lab test builds them again and says why it cannot.
repo_pid=
if [ "$(id -u)" -eq 0 ]; then
  lab/gpuctl-lab repo >build/lab-repo.log 2>&1 &
  repo_pid=$!
fi
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$jobs" --target gpuctl gpuctl_lab_tests gpuctl-bench-scale
if [ -n "$repo_pid" ] && ! wait "$repo_pid"; then
  echo "lab repository build failed (the lab tests retry it):"
  tail -n 20 build/lab-repo.log
fi

stage "lint: step scripts and shell (shellcheck, copies)"
bash scripts/lint-steps.sh build/release/gpuctl

stage "build: asan+ubsan"
# The sanitizer builds are for the tests only: -g1 (line tables, no types or
# variables) keeps file:line in every sanitizer report and compiles and links
# faster than the full -g of a Debug build.
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DGPUCTL_SANITIZE=ON >/dev/null
# Only what runs under ASan: the lab tests run on Release.
cmake --build build/asan -j "$jobs" --target gpuctl gpuctl_unit_tests

stage "unit tests (asan+ubsan)"
# GoogleTest's own shards, one process per core, not ctest's process per
# case: an ASan binary this size takes a third of a second to start, and
# ~800 starts were more than half of this stage. The CliSsh cases share this
# host's sshd and the node lock in /var/lib/gpuctl, so they run after, alone
# (as ctest's RUN_SERIAL has them). `ctest -L unit` still runs each case in
# a process of its own, for a developer who wants that.
unit_failed=0
unit_pids=()
for ((shard = 0; shard < jobs; shard++)); do
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 GTEST_TOTAL_SHARDS=$jobs \
    GTEST_SHARD_INDEX=$shard build/asan/tests/gpuctl_unit_tests --gtest_filter='-CliSsh*' \
    --gtest_brief=1 >"build/asan/unit-shard-$shard.log" 2>&1 &
  unit_pids+=($!)
done
for shard in "${!unit_pids[@]}"; do
  wait "${unit_pids[$shard]}" || unit_failed=1
  echo "-- shard $shard of $jobs (build/asan/unit-shard-$shard.log)"
  cat "build/asan/unit-shard-$shard.log"
done
echo "-- CliSsh*, alone"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  build/asan/tests/gpuctl_unit_tests --gtest_filter='CliSsh*' --gtest_brief=1 || unit_failed=1
if [ "$unit_failed" -ne 0 ]; then
  echo "unit tests (asan+ubsan) failed: the [  FAILED  ] lines above name them"
  exit 1
fi
stage "unit tests (tsan)"
# The executor, the prober and the input reader run on threads of their own;
# a race there shows as a rare flake elsewhere and as a report here.
# gpuctl_thread_tests is the unit test files whose tests run gpuctl on
# threads (tests/CMakeLists.txt); the others start none, so TSan skips them.
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DGPUCTL_SANITIZE_THREAD=ON >/dev/null
cmake --build build/tsan -j "$jobs" --target gpuctl_thread_tests
TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/gpuctl_thread_tests --gtest_brief=1
stage "fuzz (bounded libFuzzer run over the loaders and parsers)"
bash scripts/fuzz.sh
stage "lab tests (release, two labs at a time)"
# Two at once (tests/CMakeLists.txt says why it is safe); more would starve
# the labs' own timeouts on a 2-core machine. GPUCTL_LAB_JOBS=1: one by one.
ctest --test-dir build/release -L lab --output-on-failure -j "${GPUCTL_LAB_JOBS:-2}"
stage "all tests passed"
