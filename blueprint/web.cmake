# The dashboard (`attribution-blueprint web`, docs/dashboard.md): SQLite reader, the front end
# compiled into the binary, and the browser test. Included from blueprint/CMakeLists.txt.
find_package(SQLite3 REQUIRED)
target_link_libraries(blueprint_lib PUBLIC SQLite::SQLite3)

# dashboard/src (plain ES modules, no build step) → a generated .cc holding every file.
set(ATTRIBUTION_DASHBOARD_SRC ${PROJECT_SOURCE_DIR}/dashboard/src)
file(GLOB ATTRIBUTION_DASHBOARD_FILES CONFIGURE_DEPENDS ${ATTRIBUTION_DASHBOARD_SRC}/*)
set(ATTRIBUTION_DASHBOARD_GEN ${CMAKE_CURRENT_BINARY_DIR}/generated/web_assets.cc)
add_custom_command(
  OUTPUT ${ATTRIBUTION_DASHBOARD_GEN}
  COMMAND ${CMAKE_COMMAND} -DSRC_DIR=${ATTRIBUTION_DASHBOARD_SRC} -DOUT=${ATTRIBUTION_DASHBOARD_GEN}
          -P ${PROJECT_SOURCE_DIR}/dashboard/embed.cmake
  DEPENDS ${ATTRIBUTION_DASHBOARD_FILES} ${PROJECT_SOURCE_DIR}/dashboard/embed.cmake
  COMMENT "Embedding the dashboard front end"
  VERBATIM)
target_sources(blueprint_lib PRIVATE ${ATTRIBUTION_DASHBOARD_GEN})

# Browser test: headless Debian chromium + playwright-core against a store built from samples/.
if(BUILD_TESTING OR ATTRIBUTION_BUILD_TESTS)
  add_test(NAME dashboard
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/dashboard/run.sh $<TARGET_FILE:attribution-blueprint> ${CMAKE_BINARY_DIR})
  set_tests_properties(dashboard PROPERTIES TIMEOUT 900 LABELS "dashboard;browser" SKIP_RETURN_CODE 77)
  add_test(NAME dashboard_postgres
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/dashboard/postgres.sh $<TARGET_FILE:attribution-blueprint> ${CMAKE_BINARY_DIR})
  set_tests_properties(dashboard_postgres PROPERTIES TIMEOUT 900 LABELS "dashboard;browser;postgres" SKIP_RETURN_CODE 77)
endif()

# The Fabric page (dashboard/src/fabric.js) on a store written from the simulated fleet (bench/fabric).
if(BUILD_TESTING OR ATTRIBUTION_BUILD_TESTS)
  add_test(NAME dashboard_fabric
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/dashboard/fabric.sh $<TARGET_FILE:attribution-blueprint> ${CMAKE_BINARY_DIR})
  set_tests_properties(dashboard_fabric PROPERTIES TIMEOUT 900 LABELS "dashboard;browser;fabric" SKIP_RETURN_CODE 77)
endif()
