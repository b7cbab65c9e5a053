# hostd/extract: warm-appliance launch and salvage times vs a cold one-shot launch. Prints
# figures; passes whenever it ran. Run: ctest -L bench -R extract --verbose
stockade_test(NAME bench_extract LABEL bench SOURCES extract_bench.c
              LIBS stockade_extract stockade_base TIMEOUT 900)
target_compile_definitions(bench_extract PRIVATE
    STOCKADE_APPLIANCE_QEMU="$<TARGET_FILE:stockade-appliance-qemu>")
set_tests_properties(bench_extract PROPERTIES RESOURCE_LOCK libguestfs)
