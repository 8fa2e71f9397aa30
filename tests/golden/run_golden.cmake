# Runs g5sim with ARGS in SOURCE_DIR and compares exit status, stdout and stderr with golden files
# (SST refFiles style). -DUPDATE=ON rewrites the golden files instead.
#   -DG5SIM=... -DSOURCE_DIR=... -DARGS="a;b;c" -DEXPECT_RC=N -DGOLDEN=path/without/extension
# No step cache folder: a warm one would add "read from the step cache folder" to serve's lines.
set(ENV{G5SIM_STEP_CACHE_DIR} off)
execute_process(COMMAND ${G5SIM} ${ARGS}
                WORKING_DIRECTORY ${SOURCE_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(UPDATE)
  file(WRITE ${GOLDEN}.stdout "${out}")
  file(WRITE ${GOLDEN}.stderr "${err}")
  return()
endif()
if(NOT rc STREQUAL EXPECT_RC)
  message(FATAL_ERROR "exit status ${rc}, expected ${EXPECT_RC}\nstderr:\n${err}")
endif()
foreach(stream stdout stderr)
  if(stream STREQUAL "stdout")
    set(actual "${out}")
  else()
    set(actual "${err}")
  endif()
  file(READ ${GOLDEN}.${stream} expected)
  if(NOT actual STREQUAL expected)
    # A unified diff, not both files whole: a one-line change in a long output stays readable.
    string(MD5 tag "${GOLDEN}")
    set(actual_file ${CMAKE_CURRENT_BINARY_DIR}/golden_actual_${tag}.${stream})
    file(WRITE ${actual_file} "${actual}")
    execute_process(COMMAND diff -u --label expected/${stream} --label actual/${stream} ${GOLDEN}.${stream} ${actual_file}
                    OUTPUT_VARIABLE difference)
    message(FATAL_ERROR "${stream} differs from ${GOLDEN}.${stream} (-DUPDATE_GOLDEN=ON rewrites it):\n${difference}")
  endif()
endforeach()
