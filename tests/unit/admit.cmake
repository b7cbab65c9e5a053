# hostd/admit (pure quota arithmetic, token forms) and the store's tenant tables (issue 5).
stockade_test(NAME unit_admit LABEL unit SOURCES test_admit.c
              LIBS stockade_admit PkgConfig::CMOCKA)
pkg_check_modules(STOCKADE_TEST_SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
stockade_test(NAME unit_store_tenants LABEL unit SOURCES test_store_tenants.c
              LIBS stockade_store PkgConfig::STOCKADE_TEST_SQLITE3 PkgConfig::CMOCKA)
# Cluster mode's copy of the tenants and tokens (store_sync.c, issue 16): the merge decision
# and its application to a real store.
stockade_test(NAME unit_store_sync LABEL unit SOURCES test_store_sync.c
              LIBS stockade_store PkgConfig::CMOCKA)
