# The warm pool against real libvirtd and real guests (issue 3). Needs the minimal image.
add_library(stockade_poolharness STATIC ${PROJECT_SOURCE_DIR}/tests/lib/poolharness.c)
target_include_directories(stockade_poolharness PUBLIC ${PROJECT_SOURCE_DIR}/tests/lib)
target_compile_definitions(stockade_poolharness PUBLIC
    STOCKADE_TEST_IMAGE_DIR="${STOCKADE_IMAGE_DIR}")
target_link_libraries(stockade_poolharness PUBLIC stockade_pool stockade_testlib)

add_executable(test_pool ${CMAKE_CURRENT_LIST_DIR}/test_pool.c)
find_package(Threads REQUIRED)
target_link_libraries(test_pool PRIVATE stockade_poolharness Threads::Threads)
# probe-*: the accel=auto KVM probe made to fail each way on purpose; the pool's failure
# counters stay 0 whatever the probe did. (The probe as this host has it: integration_accel,
# through a daemon; `test_pool probe-host copy` runs it here by hand.)
# wedged and impostor (channel-level: the same code in both modes) run in CI on the default,
# template; on copy by hand (`test_pool wedged copy`), to keep CI under its 40 minutes.
foreach(scenario clones refill restart probe-panic probe-hang probe-nosync)
    add_test(NAME integration_pool_${scenario} COMMAND test_pool ${scenario} copy)
    set_tests_properties(integration_pool_${scenario} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE)
endforeach()
# guest_memory = template (issue 15): the scenarios on copy-on-write clones of one template
# per shape; each checks the pool really runs clones (no silent fallback), except `fallback`,
# where the template path is made to fail and copy must take over, with the reason.
foreach(scenario clones refill restart fallback wedged impostor)
    add_test(NAME integration_pool_template_${scenario} COMMAND test_pool ${scenario} template)
    set_tests_properties(integration_pool_template_${scenario} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE)
endforeach()

# accel=auto through a real daemon: the probe's figure apart from the pool's failure counters
# in GET /v1/pool, /metrics, status.json and `stockade pool`; the cached verdict on restart.
find_program(STOCKADE_ACCEL_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME integration_accel COMMAND ${STOCKADE_ACCEL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_accel.py)
set_tests_properties(integration_accel PROPERTIES LABELS integration SKIP_RETURN_CODE 77
    TIMEOUT 900 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")

# issue 25: the memory templates' folder made first by another user (uid 65534), then a
# symlink in its place; the pool is made, not started (no guest), so this is quick.
add_executable(test_pool_dirs ${CMAKE_CURRENT_LIST_DIR}/test_pool_dirs.c)
target_link_libraries(test_pool_dirs PRIVATE stockade_poolharness)
foreach(scenario squatted configured)
    add_test(NAME integration_pool_dirs_${scenario} COMMAND test_pool_dirs ${scenario})
    set_tests_properties(integration_pool_dirs_${scenario} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
# ... and through a real daemon: the refusal's log line, and nothing of the templates' folder or
# the state directory within reach of uid 65534 (a process as that user tries).
add_test(NAME integration_pool_dirs_daemon
    COMMAND ${STOCKADE_ACCEL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_pool_dirs.py)
set_tests_properties(integration_pool_dirs_daemon PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")

# issue 27: pause and resume of a template clone (the pool's primitive): a file and a running
# process survive four pause/resume cycles; altered, truncated, missing state files and one
# made against another template are refused before QEMU sees them.
add_executable(test_pool_pause ${CMAKE_CURRENT_LIST_DIR}/test_pool_pause.c)
target_link_libraries(test_pool_pause PRIVATE stockade_poolharness stockade_runner_client
                      stockade_pausefile)
add_test(NAME integration_pool_pause COMMAND test_pool_pause)
set_tests_properties(integration_pool_pause PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE)
