# hostd/http: the HTTP layer's pure parts: request-target parsing, the count per caller and the
# TLS front door's ClientHello check (the server itself is tested in
# tests/integration/api_http.cmake).
stockade_test(NAME unit_api_http_url LABEL unit SOURCES api_http_url.c
              LIBS stockade_http_url stockade_testlib PkgConfig::CMOCKA)
# The workspace tar writer read back by our reader, GNU tar and Python's tarfile, over a tree
# whose long-named files hold forged tar headers (issue 14).
add_executable(api_tarwriter_tool api_tarwriter_tool.c)
target_link_libraries(api_tarwriter_tool PRIVATE stockade_tarwriter stockade_extract_untar
                      stockade_base)
stockade_script_test(NAME unit_api_tarwriter LABEL unit
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/api_tarwriter_readers.py
            $<TARGET_FILE:api_tarwriter_tool>)
# The faces' router (hostd/http/http_route.c): one table matcher for the native API and E2B.
stockade_test(NAME unit_http_route LABEL unit SOURCES test_http_route.c
              LIBS stockade_http_url stockade_testlib PkgConfig::CMOCKA)
