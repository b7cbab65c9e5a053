# hostd/http server layer over loopback TCP and a unix socket in a scratch directory:
# one ctest per scenario (api_http_test.c lists them). Timing-sensitive, so RUN_SERIAL.
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(TEST_GNUTLS REQUIRED IMPORTED_TARGET gnutls)
find_package(Threads REQUIRED)
add_executable(test_api_http api_http_test.c api_http_test_req.c api_http_test_conn.c
               api_http_test_hostile.c api_http_test_loop.c api_http_test_share.c
               api_http_test_tls.c
               api_http_client.c)
target_link_libraries(test_api_http PRIVATE stockade_http stockade_loop stockade_testlib
                      PkgConfig::CURL PkgConfig::TEST_GNUTLS Threads::Threads)
# tls: the test CA is made by tests/lib/testca.sh (openssl) at start.
target_compile_definitions(test_api_http PRIVATE STOCKADE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
foreach(scenario echo paths body unix config slowloris idle load limits stream disconnect
        stop cpu guard crowd loop share rate tls)
    add_test(NAME integration_api_http_${scenario} COMMAND test_api_http ${scenario})
    set_tests_properties(integration_api_http_${scenario} PROPERTIES LABELS integration
                         SKIP_RETURN_CODE 77 TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
