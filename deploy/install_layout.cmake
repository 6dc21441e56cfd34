# Install-time part of deploy/CMakeLists.txt (run by `cmake --install` and by CPack): writes the
# systemd units and the configuration with the paths of the actual install prefix, so the units'
# ExecStart names the installed binaries whatever --prefix was given. Variables from the caller:
# ATTRIBUTION_DEPLOY_SRC (deploy/), ATTRIBUTION_CONFIG_SRC (config/), ATTRIBUTION_DEPLOY_WORK (a
# scratch directory in the build tree).
#   prefix /usr (the Debian package):  units in /usr/lib/systemd/system, configuration in /etc/attribution
#   any other prefix P:                units in P/lib/systemd/system, configuration in P/etc/attribution
set(_prefix "${CMAKE_INSTALL_PREFIX}")
if(_prefix STREQUAL "/usr")
  set(_sysconf "/etc")
else()
  set(_sysconf "${_prefix}/etc")
endif()
file(MAKE_DIRECTORY "${ATTRIBUTION_DEPLOY_WORK}/systemd")
file(GLOB _units "${ATTRIBUTION_DEPLOY_SRC}/systemd/*.service" "${ATTRIBUTION_DEPLOY_SRC}/systemd/*.timer")
set(_generated)
foreach(_unit IN LISTS _units)
  get_filename_component(_name "${_unit}" NAME)
  file(READ "${_unit}" _text)
  string(REPLACE "/usr/bin/attribution-" "${_prefix}/bin/attribution-" _text "${_text}")
  string(REPLACE "/usr/share/attribution/" "${_prefix}/share/attribution/" _text "${_text}")
  string(REPLACE "/usr/share/doc/attribution/" "${_prefix}/share/doc/attribution/" _text "${_text}")
  string(REPLACE "/etc/attribution/" "${_sysconf}/attribution/" _text "${_text}")
  file(WRITE "${ATTRIBUTION_DEPLOY_WORK}/systemd/${_name}" "${_text}")
  list(APPEND _generated "${ATTRIBUTION_DEPLOY_WORK}/systemd/${_name}")
endforeach()
file(INSTALL ${_generated} DESTINATION "${_prefix}/lib/systemd/system" FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${ATTRIBUTION_DEPLOY_SRC}/systemd/attribution.sysusers" DESTINATION "${_prefix}/lib/sysusers.d"
     RENAME attribution.conf FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

# Configuration: the examples, with rules and state paths of this prefix.
file(READ "${ATTRIBUTION_DEPLOY_SRC}/config/service.example.yaml" _service)
string(REPLACE "/usr/share/attribution/" "${_prefix}/share/attribution/" _service "${_service}")
file(WRITE "${ATTRIBUTION_DEPLOY_WORK}/service.yaml" "${_service}")
file(READ "${ATTRIBUTION_CONFIG_SRC}/blueprint.example.yaml" _blueprint)
string(REPLACE "/usr/share/attribution/" "${_prefix}/share/attribution/" _blueprint "${_blueprint}")
file(WRITE "${ATTRIBUTION_DEPLOY_WORK}/blueprint.yaml" "${_blueprint}")
file(INSTALL "${ATTRIBUTION_DEPLOY_WORK}/service.yaml" "${ATTRIBUTION_DEPLOY_WORK}/blueprint.yaml"
     DESTINATION "${_sysconf}/attribution" FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
