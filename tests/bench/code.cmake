# tests/bench/run code runs bench_code.py against a real stockaded with a data pool (issue 18:
# what a code context's first and warm runs cost beside a plain exec); the smoke run keeps it
# from rotting (checks that figures come out, never their values).
find_program(STOCKADE_BENCH_CODE_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME bench_code_smoke
         COMMAND ${STOCKADE_BENCH_CODE_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/bench_code.py --quick)
set_tests_properties(bench_code_smoke PROPERTIES LABELS bench SKIP_RETURN_CODE 77 TIMEOUT 1800
    RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}"
    PASS_REGULAR_EXPRESSION "\"first_run_code_over_echo\": [0-9]")
