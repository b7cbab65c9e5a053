# Hostile guest programs, each ending at most its own session (issue 8).
find_program(STOCKADE_HOSTILE_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME integration_hostile_guests
         COMMAND ${STOCKADE_HOSTILE_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_hostile_guests.py)
set_tests_properties(integration_hostile_guests PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 1200 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
