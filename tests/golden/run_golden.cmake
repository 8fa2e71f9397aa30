# Runs g5sim with ARGS in SOURCE_DIR and compares exit status, stdout and stderr with golden files
# (SST refFiles style). -DUPDATE=ON rewrites the golden files instead.
#   -DG5SIM=... -DSOURCE_DIR=... -DARGS="a;b;c" -DEXPECT_RC=N -DGOLDEN=path/without/extension
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
    message(FATAL_ERROR "${stream} differs from ${GOLDEN}.${stream}\n--- actual ---\n${actual}\n--- expected ---\n${expected}")
  endif()
endforeach()
