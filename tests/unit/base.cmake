stockade_test(NAME unit_base LABEL unit SOURCES test_base.c LIBS stockade_base PkgConfig::CMOCKA)
stockade_test(NAME unit_base_rmtree LABEL unit SOURCES test_base_rmtree.c
              LIBS stockade_base PkgConfig::CMOCKA)
stockade_test(NAME unit_base_owndir LABEL unit SOURCES test_base_owndir.c
              LIBS stockade_base PkgConfig::CMOCKA)
stockade_test(NAME unit_base_log LABEL unit SOURCES test_base_log.c
              LIBS stockade_base PkgConfig::CMOCKA)
