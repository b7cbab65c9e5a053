# hostd/cluster's pure parts: the E2B listener URLs a host publishes and the check of those
# read back from another host's row (cluster_config.c).
stockade_test(NAME unit_cluster_urls LABEL unit SOURCES test_cluster_urls.c
              LIBS stockade_cluster_config PkgConfig::CMOCKA)
# The host credential's keys: HKDF-SHA-256 (RFC 5869 vectors), host_token_file's format.
stockade_test(NAME unit_cluster_keys LABEL unit SOURCES test_cluster_keys.c
              LIBS stockade_cluster_keys PkgConfig::CMOCKA)
