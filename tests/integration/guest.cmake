# Issue 2: each image booted through libvirt, its runner driven over the raw channel.
add_executable(test_guest ${CMAKE_CURRENT_LIST_DIR}/test_guest.c)
target_link_libraries(test_guest PRIVATE stockade_runner_client stockade_pool stockade_testlib)
target_compile_definitions(test_guest PRIVATE STOCKADE_TEST_IMAGE_DIR="${STOCKADE_IMAGE_DIR}")
foreach(image minimal python)
    add_test(NAME integration_guest_${image} COMMAND test_guest ${image})
    set_tests_properties(integration_guest_${image} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
endforeach()
