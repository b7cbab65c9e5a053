# Fault injection through a real stockaded (issue 8): QEMU killed or stopped mid-session and
# libvirtd restarted under the daemon (one daemon: it survives them), kill -9 of the daemon
# at random points, a state disk that fills up. RUN_SERIAL: libvirtd restarts affect all.
find_program(STOCKADE_FAULT_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(group "guest;qemu_killed qemu_stopped libvirtd_restart" "kill9;kill9"
              "disk_full;disk_full")
    list(GET group 0 name)
    list(GET group 1 scenarios)
    separate_arguments(scenarios)
    add_test(NAME integration_faults_${name}
             COMMAND ${STOCKADE_FAULT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_faults.py ${scenarios})
    set_tests_properties(integration_faults_${name} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 1200 RUN_SERIAL TRUE
        ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
endforeach()
