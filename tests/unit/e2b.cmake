# E2B compatibility (issue 9): Connect envelopes and multipart uploads (codec), ids, routing,
# paths, the command line, list filters and [e2b] keys (wire), and the JSON of both faces.
foreach(part codec wire json)
    stockade_test(NAME unit_e2b_${part} LABEL unit SOURCES test_e2b_${part}.c
                  LIBS stockade_e2b_wire PkgConfig::CMOCKA)
endforeach()
target_link_libraries(unit_e2b_wire PRIVATE stockade_config)
