# hostd/api: the HTTP layer's pure request-target parsing (the server itself is tested in
# tests/integration/api_http.cmake).
stockade_test(NAME unit_api_http_url LABEL unit SOURCES api_http_url.c
              LIBS stockade_http_url PkgConfig::CMOCKA)
