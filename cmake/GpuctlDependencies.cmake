# Every dependency comes from Debian 12's packages (scripts/install-deps.sh);
# docs/dependencies.md says why each one is here.
find_package(Threads REQUIRED)
find_package(CLI11 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(PkgConfig REQUIRED)
# Debian's libssh-dev ships a CMake config without an imported target name we
# can rely on across versions; pkg-config is stable.
pkg_check_modules(LIBSSH REQUIRED IMPORTED_TARGET libssh>=0.10)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(GTest REQUIRED)

# yaml-cpp 0.7 on Debian exports "yaml-cpp" without a namespace.
if(NOT TARGET yaml-cpp AND TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp ALIAS yaml-cpp::yaml-cpp)
endif()

# gpuctl allocates a great many small strings (300,000 plan items at 10,000
# nodes, each with its environment, digest and probe batch line); with glibc's
# malloc, allocation and freeing were a third of the plan's CPU, and its
# arenas contend between walker threads. google-perftools' tcmalloc_minimal
# (thread caches, no consolidation passes) halved the plan action at 10,000
# nodes (docs/benchmark.md). The sanitizer and fuzz builds keep the
# sanitizers' own allocator, which they need to see every allocation.
option(GPUCTL_TCMALLOC "Link gpuctl and the benchmarks with tcmalloc_minimal" ON)
if(GPUCTL_SANITIZE OR GPUCTL_SANITIZE_THREAD OR GPUCTL_FUZZ)
  set(GPUCTL_TCMALLOC OFF)
endif()
if(GPUCTL_TCMALLOC)
  pkg_check_modules(TCMALLOC REQUIRED IMPORTED_TARGET libtcmalloc_minimal)
endif()

# gpuctl_allocator(TARGET): an executable's malloc is tcmalloc's. Nothing calls
# it by name, so the linker is told to keep the library even where it would
# drop one that resolves no symbol (--as-needed).
function(gpuctl_allocator target)
  if(GPUCTL_TCMALLOC)
    target_link_options(${target} PRIVATE "LINKER:--no-as-needed")
    target_link_libraries(${target} PRIVATE PkgConfig::TCMALLOC)
  endif()
endfunction()
