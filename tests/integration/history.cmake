# What the daemon keeps of a session and how a client reads it (issue 19): events resumed
# with after= (stored and followed), heartbeats on a quiet follow, artifact retention run
# once for real on a restart. One daemon, then a second on the same state.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME integration_history
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_history.py)
set_tests_properties(integration_history PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     TIMEOUT 1200 RUN_SERIAL TRUE
                     ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
