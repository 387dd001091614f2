# The Python that plot tests run with, and hdb_add_plot_test() to register one (tests/plots and
# tests/overlap include this file, so both find the same interpreter the same way).
#
# Python: the first of $ENV{HDBENCH_PYTHON}, python3 on PATH, /usr/bin/python3 that imports
# matplotlib and numpy (the order the harness uses to draw plots). Without one, every plot test
# is still registered and FAILS with the reason (a missing dependency must not look like a pass
# or vanish), unless -DHDB_ALLOW_NO_PLOTS=ON, which registers them as skipped (exit 77) instead.
include_guard(GLOBAL)

option(HDB_ALLOW_NO_PLOTS "Report the plot tests as skipped, not failed, when no Python with matplotlib is found" OFF)

hdb_python_candidates(_hdb_plot_candidates)  # tests/CMakeLists.txt

# Found once per configure (include_guard) and kept as INTERNAL cache entries, so every directory
# that includes this file sees the result, whichever included it first.
set(HDB_PLOT_PYTHON "" CACHE INTERNAL "Python with matplotlib for the plot tests")
set(_hdb_plot_tried "")
foreach(_candidate IN LISTS _hdb_plot_candidates)
  list(APPEND _hdb_plot_tried "${_candidate}")
  execute_process(COMMAND "${_candidate}" -c "import matplotlib, numpy"
                  RESULT_VARIABLE _hdb_plot_rc OUTPUT_QUIET ERROR_QUIET)
  if(_hdb_plot_rc EQUAL 0)
    set(HDB_PLOT_PYTHON "${_candidate}" CACHE INTERNAL "Python with matplotlib for the plot tests")
    break()
  endif()
endforeach()
string(REPLACE ";" ", " _hdb_plot_tried_text "${_hdb_plot_tried}")
set(HDB_PLOT_MISSING "no Python with matplotlib and numpy (tried: ${_hdb_plot_tried_text}); install python3-matplotlib or set HDBENCH_PYTHON and re-run cmake"
    CACHE INTERNAL "why the plot tests cannot run")
if(HDB_PLOT_PYTHON)
  message(STATUS "hdbench: plot tests use ${HDB_PLOT_PYTHON}")
elseif(HDB_ALLOW_NO_PLOTS)
  message(WARNING "hdbench: ${HDB_PLOT_MISSING}; plot tests will report skipped (HDB_ALLOW_NO_PLOTS=ON)")
else()
  message(WARNING "hdbench: ${HDB_PLOT_MISSING}; plot tests will FAIL (configure with -DHDB_ALLOW_NO_PLOTS=ON to skip them)")
endif()

# hdb_add_plot_test(<name> WORKDIR <dir> ARGS <script> <args>...)
#   One CTest test (label `host`) running `<plot python> <script> <args>`, with a private
#   matplotlib config and the Agg backend; a stand-in that fails or skips without that Python.
function(hdb_add_plot_test name)
  cmake_parse_arguments(ARG "" "WORKDIR" "ARGS" ${ARGN})
  if(HDB_PLOT_PYTHON)
    add_test(NAME "${name}" COMMAND "${HDB_PLOT_PYTHON}" ${ARG_ARGS})
  elseif(HDB_ALLOW_NO_PLOTS)
    add_test(NAME "${name}" COMMAND sh "${PROJECT_SOURCE_DIR}/tests/plots/skip.sh" "${HDB_PLOT_MISSING}")
  else()
    add_test(NAME "${name}" COMMAND sh "${PROJECT_SOURCE_DIR}/tests/plots/fail.sh" "${HDB_PLOT_MISSING}")
  endif()
  set_tests_properties("${name}" PROPERTIES
                       LABELS host SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "MPLBACKEND=Agg;MPLCONFIGDIR=${ARG_WORKDIR}/mplconfig;HDBENCH_PLOT_MODULES=")
endfunction()
