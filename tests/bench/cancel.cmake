# tests/bench/run cancel runs bench_cancel.py against a real stockaded; the smoke run keeps
# it from rotting (checks that figures come out, never their values).
find_program(STOCKADE_BENCH_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME bench_cancel_smoke
         COMMAND ${STOCKADE_BENCH_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/bench_cancel.py --quick)
set_tests_properties(bench_cancel_smoke PROPERTIES LABELS bench SKIP_RETURN_CODE 77 TIMEOUT 900
    RUN_SERIAL TRUE ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR}"
    PASS_REGULAR_EXPRESSION "\"cancel_to_artifacts_p50_s\": [0-9]")
