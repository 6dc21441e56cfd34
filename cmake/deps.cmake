# System dependencies only (Debian 12 packages; see scripts/install-deps.sh).
find_package(PkgConfig REQUIRED)
pkg_check_modules(HS REQUIRED IMPORTED_TARGET libhs)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)   # JIT capture engine (RE2 stays the reference)
find_package(nlohmann_json 3.11 CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
if(TARGET yaml-cpp AND NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()
find_package(fmt CONFIG REQUIRED)
find_package(OpenSSL REQUIRED)   # SHA-256 for the rules digest
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
