# Cluster mode (issue 16) against a real PostgreSQL that tests/lib/pgtemp.py starts and
# removes (initdb/pg_ctl in a temp folder, a unix socket only): nothing installed by hand.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
pkg_check_modules(STOCKADE_TEST_LIBPQ REQUIRED IMPORTED_TARGET libpq)
add_executable(integration_cluster_pg_bin cluster_pg.c cluster_pg_lost.c
               cluster_pg_place.c cluster_pg_bounds.c cluster_pg_remove.c)
target_link_libraries(integration_cluster_pg_bin PRIVATE stockade_cluster stockade_testlib
                      PkgConfig::STOCKADE_TEST_LIBPQ Threads::Threads)
add_test(NAME integration_cluster_pg
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/lib/pgtemp.py --
                 $<TARGET_FILE:integration_cluster_pg_bin>)
set_tests_properties(integration_cluster_pg PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     TIMEOUT 300)
# Three real stockaded sharing that PostgreSQL (test_cluster.py): real guests, one at a time.
foreach(scenario race tenants route)
    add_test(NAME integration_cluster_${scenario}
             COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_cluster.py ${scenario})
    set_tests_properties(integration_cluster_${scenario} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 1500 RUN_SERIAL TRUE
        ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
endforeach()
# A host that dies (test_cluster_lost.py): b killed with SIGKILL mid-task, taken over by a or
# c at the first takeover round after its lease (the database's statement log says which),
# then started again on its own state.
add_test(NAME integration_cluster_host_lost
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_cluster_lost.py)
set_tests_properties(integration_cluster_host_lost PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 1800 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
