# E2B SDK compatibility (issue 9): the real SDK (npm e2b@2.51.0, installed into the build tree
# by the test) against a real stockaded. Python 3 from Debian, stdlib only; Node.js and npm.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME integration_e2b_sdk
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_e2b.py)
set_tests_properties(integration_e2b_sdk PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")

# Hostile envd input (issue 14): Connect spoken directly (no SDK), a real daemon and guest.
add_test(NAME integration_e2b_hostile
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_e2b_hostile.py)
set_tests_properties(integration_e2b_hostile PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")

# Who gets in and what is refused (issue 19): envd tokens, signed URLs, another tenant's
# sandbox, the 501 paths, paths outside /workspace, a killed sandbox's 502. Raw HTTP, no SDK.
add_test(NAME integration_e2b_auth
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_e2b_auth.py)
set_tests_properties(integration_e2b_auth PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")

# Loop hand-off (issue 17, "two front doors"): creates waiting for a guest hold no connection
# thread inside a handler, a quick request is answered meanwhile, and the wait's end is today's
# 503. Raw HTTP, no SDK.
add_test(NAME integration_e2b_loop
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_e2b_loop.py)
set_tests_properties(integration_e2b_loop PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")

# E2B Code Interpreter face (issue 18): test_e2b_code.py (the real SDK, npm
# @e2b/code-interpreter@2.8.0) runs inside integration_code (tests/integration/code.cmake), on
# its daemon: one data template boot for both.

# Promised error codes and limits (issue 31): one table row per promise of hostd/api/API.md
# and hostd/e2b/README.md (tests/integration/promises_*.py), both faces on one daemon.
add_test(NAME integration_promises
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_promises.py)
set_tests_properties(integration_promises PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")

# Users (issue 28): root when asked (native "user", E2B Basic root: and /files username=root),
# else the session's user; root-owned files come back (Finalize and salvage). Raw HTTP.
add_test(NAME integration_users
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_users.py)
set_tests_properties(integration_users PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
