# Stateful code contexts through a real stockaded and data-image guests (issue 18): the native
# API, then the E2B Code Interpreter SDK (test_e2b_code.py; Node.js, npm) on the same daemon.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME integration_code COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_code.py)
set_tests_properties(integration_code PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 1800 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
