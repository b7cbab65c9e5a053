# Sessions and tasks through a real stockaded (issue 4). Python 3 from Debian, stdlib only.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(scenario stream cancel timeout hostile restart)
    add_test(NAME integration_sessions_${scenario}
             COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_sessions.py ${scenario})
    set_tests_properties(integration_sessions_${scenario} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
        ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR}")
endforeach()
