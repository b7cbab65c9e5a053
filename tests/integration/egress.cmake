# Egress (issue 7).
# integration_runner_proxy: the runner's proxy and tunnel in host mode (--serve-fd on a
#   socketpair, --proxy-port), the test playing the host. Needs root; skips otherwise.
# integration_egress_*: a real stockaded and real guests; a network namespace with a veth pair
#   and an HTTP server is the upstream (test_egress.py). Needs root, libvirtd, ip(8).
stockade_test(NAME integration_runner_proxy LABEL integration TIMEOUT 120
              SOURCES runner_proxy.c
              LIBS stockade_runner_client stockade_proto stockade_base PkgConfig::CMOCKA
              ARGS $<TARGET_FILE:stockade-runner>)
add_dependencies(integration_runner_proxy stockade-runner)
# integration_egress_engine: the daemon's stream engine on a real loop and real sockets, the
#   test playing the guest and the upstream (loopback). Any user; ASan sees it in that build.
stockade_test(NAME integration_egress_engine LABEL integration TIMEOUT 60
              SOURCES egress_engine.c LIBS stockade_egress PkgConfig::CMOCKA)

find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME integration_egress
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_egress.py)
set_tests_properties(integration_egress PROPERTIES LABELS integration SKIP_RETURN_CODE 77
    TIMEOUT 900 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
