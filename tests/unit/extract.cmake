# hostd/extract: the pure parts (tar parser, safe writer, name checks, pre-scan decoder).
stockade_test(NAME unit_extract LABEL unit SOURCES test_extract.c
              LIBS stockade_extract_untar stockade_base PkgConfig::CMOCKA)
