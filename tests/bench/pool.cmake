# tests/bench/run pool builds and runs bench_pool. The smoke test runs it in --quick mode so
# the benchmark cannot rot; it checks that figures come out, never their values.
add_executable(bench_pool ${CMAKE_CURRENT_LIST_DIR}/bench_pool.c
    ${CMAKE_CURRENT_LIST_DIR}/guest_memory.c)
target_link_libraries(bench_pool PRIVATE stockade_poolharness)
add_test(NAME bench_pool_smoke COMMAND bench_pool --quick)
set_tests_properties(bench_pool_smoke PROPERTIES LABELS bench SKIP_RETURN_CODE 77 TIMEOUT 900
    RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION "\"handout_first_byte_p50_ms\":[0-9]")
# tests/bench/run density: the same binary, memory only, at 1 and 2 guests in the smoke run.
add_test(NAME bench_density_smoke COMMAND bench_pool --density 1,2)
set_tests_properties(bench_density_smoke PROPERTIES LABELS bench SKIP_RETURN_CODE 77
    TIMEOUT 900 RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION "\"copy_over_template\":[0-9]")
