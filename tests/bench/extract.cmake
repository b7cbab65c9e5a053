# hostd/extract: warm-appliance launch and salvage times vs a cold one-shot launch. Prints
# figures; passes whenever it ran. Run: ctest -L bench -R extract --verbose
stockade_test(NAME bench_extract LABEL bench SOURCES extract_bench.c
              LIBS stockade_extract stockade_base TIMEOUT 900)
set_tests_properties(bench_extract PROPERTIES RESOURCE_LOCK libguestfs)
