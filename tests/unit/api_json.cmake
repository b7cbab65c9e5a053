# hostd/api: the routes' small parsers (api_json_routes.c), pure, linked alone.
stockade_test(NAME unit_api_json_routes LABEL unit SOURCES test_api_json_routes.c
              LIBS stockade_api_json PkgConfig::CMOCKA)
