# The one CMake reader of harness/suite.json and of the tests' own manifests (the top level, bench/ and
# tests/standin_family include it), so the manifest's rules are checked in one place: schema_version 2, every family's folder exists and
# holds its declaration (schema.json).
#
# hdb_read_manifest([<manifest>])
#   Sets, in the caller's scope: hdb_manifest_families (names, manifest order) and, per family,
#   hdb_family_<name>_folder (absolute) and hdb_family_<name>_binary. Reads harness/suite.json, or
#   <manifest> (absolute), one of hdb_test_manifests.
#
# hdb_test_manifests(<out>)
#   The manifests of families that only the tests run: every tests/<folder>/suite.json (today the
#   stand-in's, tests/standin_family/suite.json). The harness compiles their report rules into its
#   registry beside the suite's, and their folder's CMakeLists.txt builds them with hdb_add_family;
#   but harness/suite.json, the one list `hdbench run`, the install and ./run_all.sh read, never
#   names them, so a node's run never starts one.
include_guard(GLOBAL)

function(hdb_test_manifests out)
  file(GLOB manifests CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/*/suite.json")
  set(${out} "${manifests}" PARENT_SCOPE)
endfunction()

function(hdb_read_manifest)
  set(manifest "${PROJECT_SOURCE_DIR}/harness/suite.json")
  if(ARGC GREATER 0)
    set(manifest "${ARGV0}")
  endif()
  file(READ "${manifest}" suite)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${manifest}")
  string(JSON version GET "${suite}" schema_version)
  if(NOT version EQUAL 2)
    message(FATAL_ERROR "hdbench: ${manifest} has schema_version ${version}; this build reads 2")
  endif()
  set(names "")
  string(JSON count LENGTH "${suite}" families)
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON name GET "${suite}" families ${i} name)
      string(JSON folder GET "${suite}" families ${i} folder)
      string(JSON binary GET "${suite}" families ${i} binary)
      set(folder "${PROJECT_SOURCE_DIR}/${folder}")
      if(NOT IS_DIRECTORY "${folder}")
        message(FATAL_ERROR "hdbench: ${manifest}: family '${name}' names folder ${folder}, which does not exist")
      endif()
      if(NOT EXISTS "${folder}/schema.json")
        message(FATAL_ERROR "hdbench: ${manifest}: family '${name}' has no ${folder}/schema.json (its declaration)")
      endif()
      list(APPEND names "${name}")
      set(hdb_family_${name}_folder "${folder}" PARENT_SCOPE)
      set(hdb_family_${name}_binary "${binary}" PARENT_SCOPE)
    endforeach()
  endif()
  set(hdb_manifest_families "${names}" PARENT_SCOPE)
endfunction()
