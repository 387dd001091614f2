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

# Catch2 v2's console reporter indents a wrapped test or section name to just past its first ": ";
# past the console's width that indent leaves no room, and a failing test's report loops forever
# (seen: gigabytes of one repeated line). A name's first ": " must come early, or the name be short.
set(long_names "")
foreach(source IN LISTS sources)
  file(READ "${source}" text)
  string(REGEX MATCHALL "(TEST_CASE|SECTION)\\(\"[^\"]*\"" calls "${text}")
  foreach(call IN LISTS calls)
    string(REGEX REPLACE "^(TEST_CASE|SECTION)\\(\"" "" name "${call}")
    string(REGEX REPLACE "\"$" "" name "${name}")
    string(LENGTH "${name}" length)
    string(FIND "${name}" ": " colon)
    if(length GREATER 76 AND colon GREATER_EQUAL 60)
      list(APPEND long_names "${source}: ${name}")
    endif()
  endforeach()
endforeach()
if(long_names)
  list(JOIN long_names "\n  " listed)
  message(FATAL_ERROR "test names whose first \": \" comes at column 60 or later and that run past 76 characters "
                      "(Catch2 v2 loops forever reporting their failure; put the colon earlier or shorten them):\n  ${listed}")
endif()
