# E2B compatibility (issue 9): Connect envelopes and multipart uploads (codec), ids, routing,
# paths, the command line, list filters and [e2b] keys (wire), the JSON of both faces, and the
# code interpreter face's bodies, context ids and NDJSON messages (code, issue 18).
foreach(part codec wire json code)
    stockade_test(NAME unit_e2b_${part} LABEL unit SOURCES test_e2b_${part}.c
                  LIBS stockade_e2b_wire PkgConfig::CMOCKA)
endforeach()
target_link_libraries(unit_e2b_wire PRIVATE stockade_config)
