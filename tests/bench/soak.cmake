# tests/bench/run soak runs bench_soak.py against a real stockaded; the smoke run (2 clients,
# 1 minute) keeps it from rotting (checks that the report comes out, never its values).
find_program(STOCKADE_BENCH_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME bench_soak_smoke
         COMMAND ${STOCKADE_BENCH_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/bench_soak.py --quick)
set_tests_properties(bench_soak_smoke PROPERTIES LABELS bench SKIP_RETURN_CODE 77 TIMEOUT 900
    RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}"
    PASS_REGULAR_EXPRESSION "\"sessions_per_min\": [0-9]")
