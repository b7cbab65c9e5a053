# The real stockade-runner in host mode (--serve-fd on a socketpair), driven through the
# reusable test client tests/lib/runner_client.{c,h} (library stockade_runner_client: the
# daemon's real-guest test links it too). Two runs of one binary: exec trees in a cgroup v2
# directory (..._cgroup), and the process-group fallback (..._pgroup). Needs root; skips
# otherwise.
add_library(stockade_runner_client STATIC ${PROJECT_SOURCE_DIR}/tests/lib/runner_client.c)
target_include_directories(stockade_runner_client PUBLIC ${PROJECT_SOURCE_DIR}/tests/lib)
target_link_libraries(stockade_runner_client PUBLIC stockade_proto)

stockade_test(NAME integration_runner_host_cgroup LABEL integration TIMEOUT 180
              SOURCES runner_host.c runner_host_exec.c runner_host_pty.c runner_host_files.c runner_host_park.c
              LIBS stockade_runner_client stockade_proto stockade_base PkgConfig::CMOCKA
              ARGS $<TARGET_FILE:stockade-runner> cgroup)
add_dependencies(integration_runner_host_cgroup stockade-runner)
target_include_directories(integration_runner_host_cgroup PRIVATE ${PROJECT_SOURCE_DIR}/guest)
add_test(NAME integration_runner_host_pgroup
         COMMAND integration_runner_host_cgroup $<TARGET_FILE:stockade-runner> pgroup)
set_tests_properties(integration_runner_host_pgroup PROPERTIES LABELS integration
                     SKIP_RETURN_CODE 77 TIMEOUT 180)
