# Fails when a test source leans on what only Catch2 v2 offers: v2 puts Approx in the global
# namespace, v3 does not, so an unqualified Approx builds here (v2) and breaks on the GPU node (v3).
# Run as: cmake -DTEST_DIR=<tests> -P catch_portability.cmake
file(GLOB_RECURSE sources "${TEST_DIR}/*.cpp" "${TEST_DIR}/*.hpp")
set(offenders "")
foreach(source IN LISTS sources)
  file(READ "${source}" text)
  if(text MATCHES "using hdb_test::Approx;")
    continue()
  endif()
  string(REGEX REPLACE "hdb_test::Approx\\(" "" rest "${text}")
  if(rest MATCHES "[^A-Za-z_:]Approx\\(")
    list(APPEND offenders "${source}")
  endif()
endforeach()
if(offenders)
  list(JOIN offenders "\n  " listed)
  message(FATAL_ERROR "unqualified Approx (Catch2 v3 has none; write hdb_test::Approx):\n  ${listed}")
endif()
