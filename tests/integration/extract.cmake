# hostd/extract against real libguestfs (root, TCG): hostile workspace, 100 000 files,
# killed-VM journals and in-place slot resets on one shared appliance, then a cold salvage.
find_package(Threads REQUIRED)
stockade_test(NAME integration_extract LABEL integration SOURCES extract_salvage.c
              LIBS stockade_extract stockade_base Threads::Threads TIMEOUT 420)
target_compile_definitions(integration_extract PRIVATE
    STOCKADE_APPLIANCE_QEMU="$<TARGET_FILE:stockade-appliance-qemu>")
# One libguestfs appliance at a time on these 2-core machines (bench_extract takes it too).
set_tests_properties(integration_extract PROPERTIES RESOURCE_LOCK libguestfs)
