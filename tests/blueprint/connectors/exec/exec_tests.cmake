# The exec adapter and collector (blueprint/src/connectors/exec/), end to end through
# `attribution-blueprint run`. Included by tests/blueprint/connectors/CMakeLists.txt.
foreach(script exec_lsf_telemetry exec_failures)
  add_test(NAME connectors.exec.${script}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${script}.sh $<TARGET_FILE:attribution-blueprint> ${PROJECT_SOURCE_DIR})
  set_tests_properties(connectors.exec.${script} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77 LABELS "connectors;exec")
endforeach()
