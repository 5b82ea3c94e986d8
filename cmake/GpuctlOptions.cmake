# Build options shared by every target: warnings as errors, and an opt-in
# sanitizer build (ASan + UBSan) used by CI through -DGPUCTL_SANITIZE=ON, and
# a ThreadSanitizer build for hunting races in the executor and its fakes
# (-DGPUCTL_SANITIZE_THREAD=ON; the two cannot be combined).
option(GPUCTL_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(GPUCTL_SANITIZE_THREAD "Build with ThreadSanitizer" OFF)
option(GPUCTL_WERROR "Treat warnings as errors" ON)

if(GPUCTL_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  # Linked as a position-dependent executable: a PIE of this size carries two
  # million relative relocations (ASan's and UBSan's data), which the loader
  # applies page by page at every start. That made each unit-test process
  # (ctest starts one per case, ~800) and each gpuctl it runs take about a
  # second just to start; without them, about a third of that.
  add_link_options(-fsanitize=address,undefined -no-pie)
endif()
if(GPUCTL_SANITIZE_THREAD)
  if(GPUCTL_SANITIZE)
    message(FATAL_ERROR "GPUCTL_SANITIZE and GPUCTL_SANITIZE_THREAD cannot be combined")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# libFuzzer targets (tests/fuzz, scripts/fuzz.sh): clang only, in a build dir
# of their own. Every object, the library included, gets the fuzzer's coverage
# instrumentation (fuzzer-no-link: the fuzzer's main is linked only into the
# fuzz targets) plus ASan and UBSan, so a crash anywhere a parser reaches is
# reported; libstdc++'s assertions catch out-of-range operator[] that ASan
# cannot see inside one allocation.
option(GPUCTL_FUZZ "Build the libFuzzer targets under tests/fuzz (clang only)" OFF)
if(GPUCTL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GPUCTL_FUZZ needs clang (libFuzzer): configure with CXX=clang++")
  endif()
  if(GPUCTL_SANITIZE_THREAD)
    message(FATAL_ERROR "GPUCTL_FUZZ and GPUCTL_SANITIZE_THREAD cannot be combined")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS)
  add_link_options(-fsanitize=address,undefined)
endif()

function(gpuctl_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wconversion -Wsign-conversion -Wnull-dereference -Wdouble-promotion -Wformat=2
    -Wimplicit-fallthrough)
  # GCC 12 reports std::string members of aggregates as maybe-uninitialized at
  # -O2 (GCC bug 105562); the false positive would make -Werror unusable.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
    # With precompiled headers, GCC 12 no longer treats the standard headers
    # as system headers when it inlines them, and reports its known -O3 false
    # positives in std::string's copy (GCC bugs 105329, 107852).
    if(GPUCTL_PCH)
      target_compile_options(${target} PRIVATE -Wno-stringop-overflow -Wno-stringop-overread -Wno-array-bounds
        -Wno-restrict)
    endif()
  endif()
  if(GPUCTL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Unity builds: a target's sources compiled eight to a translation unit.
# The headers and templates they share (fmt, nlohmann_json, yaml-cpp, the
# standard library, gpuctl's own) are parsed and instantiated once per eight
# files instead of once per file: the library and the CLI build in 40% of
# the processor time (248 s against 650 s under ASan, user+sys, measured
# one after the other on a 2-core machine like CI's). CI builds them four
# times (Release, ASan, TSan, the fuzzers). Each source must therefore keep
# its file-local names (anonymous namespaces) distinct from its neighbours';
# a collision is a compile error, fixed by a better name.
option(GPUCTL_UNITY "Build each target as unity translation units" ON)
function(gpuctl_unity target)
  if(GPUCTL_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

# Precompiled headers: every translation unit includes the same heavy
# header-only libraries (CLI11 in each command's file, fmt, nlohmann_json,
# GoogleTest in each test file); parsing them once per target instead of once
# per file roughly halves a clean build, which CI does three times.
option(GPUCTL_PCH "Precompile the common third-party headers" ON)
function(gpuctl_precompile target)
  if(GPUCTL_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# The linker, as -fuse-ld=NAME for every target: lld where it is installed
# (scripts/install-deps.sh installs it), else the compiler's default (GNU ld).
# lld links the sanitizer builds' test binary, with its debug information,
# about four times faster; -DGPUCTL_LINKER= keeps the default linker.
find_program(GPUCTL_LLD ld.lld)
if(GPUCTL_LLD)
  set(gpuctl_default_linker lld)
else()
  set(gpuctl_default_linker "")
endif()
set(GPUCTL_LINKER "${gpuctl_default_linker}" CACHE STRING
  "Linker for -fuse-ld= (lld, gold, bfd); empty: the compiler's default")
if(GPUCTL_LINKER)
  add_link_options(-fuse-ld=${GPUCTL_LINKER})
endif()
