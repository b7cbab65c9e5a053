stockade_test(NAME unit_base LABEL unit SOURCES test_base.c LIBS stockade_base PkgConfig::CMOCKA)
