#!/usr/bin/env bash
# Every test gpuctl has: installs what it needs, builds Release and an
# ASan/UBSan build, runs the unit tests on both and the lab tests on Release.
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

echo "== build: asan+ubsan"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUCTL_SANITIZE=ON >/dev/null
cmake --build build/asan -j "$jobs"

echo "== unit tests (release)"
ctest --test-dir build/release -L unit --output-on-failure -j "$jobs"
echo "== unit tests (asan+ubsan)"
# The stand-in tests exercise the lab's shell and Python tools, not gpuctl's
# C++: the Release run covers them, and the repository build is minutes.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan -L unit --output-on-failure -j "$jobs" -E '^(Kube)?Standin'
echo "== lab tests (release)"
ctest --test-dir build/release -L lab --output-on-failure
echo "== all tests passed"
