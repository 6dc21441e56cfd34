# Project-wide warning flags; -Werror in CI (ATTRIBUTION_WERROR=ON).
add_library(attribution_warnings INTERFACE)
target_compile_options(attribution_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow=local
  -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(ATTRIBUTION_WERROR)
  target_compile_options(attribution_warnings INTERFACE -Werror)
endif()
