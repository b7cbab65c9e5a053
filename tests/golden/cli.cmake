# tools/ (the stockade CLI). golden_cli: outputs of the verbs against a real daemon, compared
# with tests/golden/cli/*.txt after normalising ids, times and durations;
# STOCKADE_REGEN_GOLDEN=1 rewrites them (review the diff). golden_cli_docs: the shipped
# stockaded.conf names every config key and parses uncommented; stockade.1 covers every
# verb and option the --help texts show.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME golden_cli COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/cli_golden.py)
set_tests_properties(golden_cli PROPERTIES LABELS golden SKIP_RETURN_CODE 77 TIMEOUT 900
                     RUN_SERIAL TRUE
                     ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
stockade_script_test(NAME golden_cli_docs LABEL golden
    COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/cli_docs.py ${PROJECT_SOURCE_DIR}
            ${CMAKE_BINARY_DIR})
