# Domain XML golden files; STOCKADE_REGEN_GOLDEN=1 rewrites them (review the diff).
stockade_test(NAME golden_domxml LABEL golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_domxml.c
              LIBS stockade_domxml PkgConfig::CMOCKA
              ENV "STOCKADE_GOLDEN_DIR=${CMAKE_CURRENT_LIST_DIR}/domxml")
# The goldens must also be valid libvirt domain XML (libvirt's own RelaxNG schema).
stockade_script_test(NAME golden_domxml_schema LABEL golden
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/validate_domxml.sh ${CMAKE_CURRENT_LIST_DIR}/domxml
            ${PROJECT_SOURCE_DIR}/tests/lib/mustwork.sh)
