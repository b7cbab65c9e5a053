stockade_test(NAME unit_config LABEL unit SOURCES test_config.c
              LIBS stockade_config PkgConfig::CMOCKA)
