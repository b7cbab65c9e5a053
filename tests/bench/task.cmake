# tests/bench/run task runs bench_task.py against a real stockaded (issue 13: what a task costs
# beyond its work); the smoke run keeps it from rotting (checks that figures come out, never
# their values).
find_program(STOCKADE_BENCH_TASK_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME bench_task_smoke
         COMMAND ${STOCKADE_BENCH_TASK_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/bench_task.py --quick)
set_tests_properties(bench_task_smoke PROPERTIES LABELS bench SKIP_RETURN_CODE 77 TIMEOUT 900
    RUN_SERIAL TRUE ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR}"
    PASS_REGULAR_EXPRESSION "\"task_overhead_p50_ms\": [0-9]")
