# Blueprint extras (run pipeline, stores, connectors): included by blueprint/CMakeLists.txt.
find_package(SQLite3 REQUIRED)
find_package(CURL REQUIRED)
pkg_check_modules(PQXX IMPORTED_TARGET libpqxx)
target_sources(blueprint_lib PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/connectors/registry.cc)
target_link_libraries(blueprint_lib PUBLIC yaml-cpp::yaml-cpp SQLite::SQLite3 CURL::libcurl)
if(PQXX_FOUND)
  target_link_libraries(blueprint_lib PUBLIC PkgConfig::PQXX)
  target_compile_definitions(blueprint_lib PUBLIC ATTRIBUTION_HAVE_PQXX=1)
endif()

# Connectors and stores register themselves from static initializers; link the whole archive so
# the linker keeps them even though nothing references them by name.
function(attribution_link_blueprint_whole target)
  target_link_options(${target} PRIVATE "LINKER:--whole-archive" "$<TARGET_FILE:blueprint_lib>" "LINKER:--no-whole-archive")
  add_dependencies(${target} blueprint_lib)
endfunction()
cmake_language(DEFER CALL attribution_link_blueprint_whole attribution-blueprint)

# The collectors' own link needs (libcurl, RE2, registrar anchors), kept by their owner.
include(${CMAKE_CURRENT_SOURCE_DIR}/collectors.cmake OPTIONAL)

# The fabric library and its store/CLI sources (docs/fabric.md).
include(${CMAKE_CURRENT_SOURCE_DIR}/fabric.cmake OPTIONAL)
