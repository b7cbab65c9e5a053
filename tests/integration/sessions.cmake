# Sessions and tasks through a real stockaded (issue 4). Python 3 from Debian, stdlib only.
# stream, cancel, timeout and hostile share one daemon; restart needs daemons of its own.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(group "shared;stream clock cancel timeout hostile queued longnames" "restart;restart")
    list(GET group 0 name)
    list(GET group 1 scenarios)
    separate_arguments(scenarios)
    add_test(NAME integration_sessions_${name}
             COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_sessions.py ${scenarios})
    set_tests_properties(integration_sessions_${name} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 1200 RUN_SERIAL TRUE
        ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
endforeach()
# A clean end over the channel (issue 13): files come back without a disk read; cancel still
# salvages. `test_finalize.py baseline` (by hand) measures the salvage-only end (finalize off)
# next to it and checks finalize_timeout_s = 0 turns finalize off; `big` (by hand) measures
# the fetch rate of 96 MiB beside the finalize's per-MiB allowance and ceiling (issue 25).
add_test(NAME integration_finalize
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_finalize.py
                 clean closed cancel)
set_tests_properties(integration_finalize PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 1200 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
# Readiness (sd_notify: READY after the API answers, STATUS, WATCHDOG, STOPPING; pool --wait
# started before the daemon) and /metrics' session, refusal and build series (issue 30): one
# daemon, the shared suites' cached state.
add_test(NAME integration_readiness
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_readiness.py)
set_tests_properties(integration_readiness PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
# Terminals (issue 28): execs on a pseudo-terminal through the native API, and the CLI's
# `exec -it` / `exec -i` under a real pseudo-terminal (test_pty.py; pty_cli.py).
add_test(NAME integration_pty
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_pty.py)
set_tests_properties(integration_pty PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 1200 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
# A restart that keeps sessions (issue 30), one state directory through four daemon runs:
# shutdown = keep (the default) and then a kill -9 both adopt running sessions (a file, a
# background process, an exec across the restart, seq, exec ids, a short lifetime re-armed
# that still times out); drain --timeout; shutdown = end keeps the old stop.
add_test(NAME integration_adopt
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_adopt.py)
set_tests_properties(integration_adopt PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 1200 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
