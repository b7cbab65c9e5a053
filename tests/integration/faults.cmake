# Fault injection through a real stockaded (issue 8): QEMU killed or stopped mid-session,
# libvirtd restarted under the daemon, kill -9 of the daemon at random points, a state disk
# that fills up. RUN_SERIAL: some restart libvirtd, which every other test needs.
find_program(STOCKADE_FAULT_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(scenario qemu_killed qemu_stopped libvirtd_restart kill9 disk_full)
    add_test(NAME integration_faults_${scenario}
             COMMAND ${STOCKADE_FAULT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_faults.py ${scenario})
    set_tests_properties(integration_faults_${scenario} PROPERTIES LABELS integration
        SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
        ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR}")
endforeach()
