# Tenants, tokens and quotas through a real stockaded (issue 5). Python 3 from Debian, stdlib
# only. One scenario per ctest entry (see test_tenants.py).
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(scenario concurrent ledger wallet isolation revoked)
    add_test(NAME integration_tenants_${scenario}
             COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_tenants.py ${scenario})
    set_tests_properties(integration_tenants_${scenario} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
        ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
endforeach()
