# hostd/api: forwarding's pure rules (api_forward_rules.c; the proxy itself is exercised by
# integration_cluster_route).
stockade_test(NAME unit_api_forward LABEL unit SOURCES test_api_forward.c
              LIBS stockade_api_forward_rules PkgConfig::CMOCKA)
