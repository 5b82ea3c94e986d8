#!/usr/bin/env bash
# Every test gpuctl has: installs what it needs, builds Release, an ASan/UBSan
# build of the unit tests and a ThreadSanitizer build of those that run
# threads, runs the unit tests on all three, fuzzes the loaders and parsers
# for a bounded time (scripts/fuzz.sh) and runs the lab tests on Release.
# Lab tests need root and network namespaces; elsewhere they skip and say why.
#
# The lab tests wait on booting nodes, package managers and reboots far more
# than they compute, so they run in the background once the Release build is
# there, beside the sanitizer builds and the fuzzing (which run at a lower
# priority, so the labs' nodes keep their pace); the lab's package
# repositories, which need no gpuctl, build beside the Release build. On two
# cores that takes the whole run from the sum of the two halves to about the
# longer one. The labs' output is printed whole when they end.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash scripts/install-deps.sh all
mkdir -p build
lab_pid=
stop_labs() {
  # A failing foreground stage ends the run: the lab tests go with it (their
  # own process group), and whatever labs they had up are purged by the next
  # run's `up`, which clears leftovers of a lab of the same name.
  if [ -n "$lab_pid" ] && kill -0 "$lab_pid" 2>/dev/null; then
    kill -TERM -- "-$lab_pid" 2>/dev/null || true
  fi
}
trap stop_labs EXIT

echo "== format check"
git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run --Werror

echo "== build: release gpuctl and the lab tests (the lab's package repositories beside them: build/lab-repo.log)"
repo_pid=
if [ "$(id -u)" -eq 0 ]; then
  lab/gpuctl-lab repo >build/lab-repo.log 2>&1 &
  repo_pid=$!
fi
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# Only what the labs need comes first; the unit tests build while they run.
cmake --build build/release -j "$jobs" --target gpuctl gpuctl_lab_tests

echo "== lint: step scripts and shell (shellcheck, copies)"
bash scripts/lint-steps.sh build/release/gpuctl

# A failed repository build is not fatal here: the first lab test builds it
# again and reports why it cannot.
if [ -n "$repo_pid" ] && ! wait "$repo_pid"; then
  echo "lab repository build failed (the lab tests retry it):"
  tail -n 20 build/lab-repo.log
fi

echo "== lab tests (release): started in the background, output at the end (build/lab-tests.log)"
setsid ctest --test-dir build/release -L lab --output-on-failure </dev/null >build/lab-tests.log 2>&1 &
lab_pid=$!
# The foreground stages below yield the CPU to the labs' nodes. nice alone
# does not do it where the scheduler groups tasks by session (autogroup, on by
# default in Debian's kernels): CPU time is shared between sessions first, and
# the lab tests and every lab node run in sessions of their own. So this
# session as a whole yields too, through its autogroup's nice value: 5, about
# a quarter of one busy node's weight, so the builds still move while the
# labs compute.
quiet() { nice -n 15 "$@"; }
if [ -w /proc/self/autogroup ]; then
  echo 5 >/proc/self/autogroup || true
fi

echo "== build: release unit tests"
quiet cmake --build build/release -j "$jobs"

echo "== build: asan+ubsan"
# The sanitizer builds are for the tests only: -g1 (line tables, no types or
# variables) keeps file:line in every sanitizer report and compiles and links
# faster than the full -g of a Debug build.
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DGPUCTL_SANITIZE=ON >/dev/null
# Only what runs under ASan: the lab tests run on Release.
quiet cmake --build build/asan -j "$jobs" --target gpuctl gpuctl_unit_tests

echo "== unit tests (release)"
quiet ctest --test-dir build/release -L unit --output-on-failure -j "$jobs"
echo "== unit tests (asan+ubsan)"
# A sanitizer build leaves out the stand-in tests (the lab's shell and Python
# tools, none of gpuctl's C++; tests/CMakeLists.txt): the Release run has them.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  quiet ctest --test-dir build/asan -L unit --output-on-failure -j "$jobs"
echo "== unit tests (tsan)"
# The executor, the prober and the input reader run on threads of their own;
# a race there shows as a rare flake elsewhere and as a report here.
# gpuctl_thread_tests is the unit test files whose tests run gpuctl on
# threads (tests/CMakeLists.txt); the others start none, so TSan skips them.
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DGPUCTL_SANITIZE_THREAD=ON >/dev/null
quiet cmake --build build/tsan -j "$jobs" --target gpuctl_thread_tests
TSAN_OPTIONS=halt_on_error=1 quiet build/tsan/tests/gpuctl_thread_tests --gtest_brief=1
echo "== fuzz (bounded libFuzzer run over the loaders and parsers)"
quiet bash scripts/fuzz.sh
echo "== lab tests (release): waiting for them to end"
lab_status=0
wait "$lab_pid" || lab_status=$?
lab_pid=
cat build/lab-tests.log
if [ "$lab_status" -ne 0 ]; then
  echo "== lab tests failed (ctest exit $lab_status)"
  exit "$lab_status"
fi
echo "== all tests passed"
