# Collectors and adapters under src/connectors/*/ (globbed into blueprint_lib by CMakeLists.txt):
# libcurl for the HTTP collectors (Loki, Prometheus), RE2 for the Loki line-filter pushdown.
# Included from blueprint/CMakeLists.txt after blueprint_lib is defined.
include_guard(GLOBAL)
find_package(CURL REQUIRED)
target_link_libraries(blueprint_lib PUBLIC CURL::libcurl PkgConfig::RE2 yaml-cpp::yaml-cpp)
# Each connector registers itself with a static registrar; `-u` makes the linker pull those
# objects out of the static library even though nothing calls them by name.
foreach(anchor files loki prometheus k8s_logs kueue)
  target_link_options(blueprint_lib INTERFACE "LINKER:-u,attribution_connector_${anchor}_anchor")
endforeach()
