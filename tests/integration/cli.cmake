# tools/ (the stockade CLI) against a real stockaded, libvirtd and guests: exit codes, Ctrl-C
# cancels and still downloads, logs -f resumes by seq through a cutting proxy, cp round
# trips, doctor without libvirtd, usage errors, tenants. One daemon for all cases.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME integration_cli
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/cli_test.py)
set_tests_properties(integration_cli PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     TIMEOUT 900 RUN_SERIAL TRUE
                     ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
