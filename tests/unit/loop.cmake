stockade_test(NAME unit_loop LABEL unit SOURCES test_loop.c
              LIBS stockade_loop PkgConfig::CMOCKA)
