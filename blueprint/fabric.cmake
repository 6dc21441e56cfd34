# The fabric library (docs/fabric.md): topology parsing, evidence resolution and the fleet fabric
# analysis. No engine, no network, no store: text and rows in, JSON out; linked by the blueprint
# (its store code, CLI and web API under src/fabric/store*, src/cli_fabric.cc) and the fuzz target.
add_library(attribution_fabric STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/src/fabric/topology.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/fabric/resolve.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/fabric/fleet.cc)
target_include_directories(attribution_fabric PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(attribution_fabric PUBLIC attribution attribution_warnings fmt::fmt
  nlohmann_json::nlohmann_json yaml-cpp::yaml-cpp)
target_link_libraries(blueprint_lib PUBLIC attribution_fabric)
file(GLOB FABRIC_STORE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/fabric/store*.cc)
if(FABRIC_STORE_SOURCES)
  target_sources(blueprint_lib PRIVATE ${FABRIC_STORE_SOURCES})
endif()
