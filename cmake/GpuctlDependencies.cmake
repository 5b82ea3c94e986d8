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
