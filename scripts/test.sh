#!/usr/bin/env bash
# Every test gpuctl has: installs what it needs, builds Release, an ASan/UBSan
# build and a ThreadSanitizer build of the unit tests, runs the unit tests on
# all three, fuzzes the loaders and parsers for a bounded time
# (scripts/fuzz.sh) and runs the lab tests on Release.
# Lab tests need root and network namespaces; elsewhere they skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash scripts/install-deps.sh all

echo "== format check"
git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run --Werror

echo "== build: release"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$jobs"

echo "== lint: step scripts and shell (shellcheck, copies)"
bash scripts/lint-steps.sh build/release/gpuctl

echo "== build: asan+ubsan"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUCTL_SANITIZE=ON >/dev/null
# Only what runs under ASan: the lab tests run on Release.
cmake --build build/asan -j "$jobs" --target gpuctl gpuctl_unit_tests

echo "== unit tests (release)"
ctest --test-dir build/release -L unit --output-on-failure -j "$jobs"
echo "== unit tests (asan+ubsan)"
# The stand-in tests exercise the lab's shell and Python tools, not gpuctl's
# C++: the Release run covers them, and the repository build is minutes.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan -L unit --output-on-failure -j "$jobs" -E '^(Kube)?Standin'
echo "== unit tests (tsan)"
# The executor, the prober and the input reader run on threads of their own;
# a race there shows as a rare flake elsewhere and as a report here.
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUCTL_SANITIZE_THREAD=ON >/dev/null
cmake --build build/tsan -j "$jobs" --target gpuctl_unit_tests
TSAN_OPTIONS=halt_on_error=1 \
  build/tsan/tests/gpuctl_unit_tests --gtest_brief=1 --gtest_filter='-Standin*:KubeStandin*'
echo "== fuzz (bounded libFuzzer run over the loaders and parsers)"
bash scripts/fuzz.sh
echo "== lab tests (release)"
ctest --test-dir build/release -L lab --output-on-failure
echo "== all tests passed"
