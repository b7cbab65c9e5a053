# The figures behind the code kernel's JSON bounds (hostd/sessions/code_wire.h, issue 25):
# jansson's stack per level of nesting and a value's growth when dumped. Prints figures;
# passes whenever it ran. Run: ctest --test-dir build -R bench_json_stack -V
pkg_check_modules(BENCH_JANSSON REQUIRED IMPORTED_TARGET jansson)
find_package(Threads REQUIRED)
stockade_test(NAME bench_json_stack LABEL bench SOURCES json_stack.c
              LIBS PkgConfig::BENCH_JANSSON Threads::Threads)
