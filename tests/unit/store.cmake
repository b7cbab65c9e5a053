stockade_test(NAME unit_store LABEL unit SOURCES test_store.c
              LIBS stockade_store stockade_sessions stockade_render PkgConfig::STOCKADE_TEST_SQLITE3
                   PkgConfig::CMOCKA)
