# The v1 routes on top of stockade_http: see api.h and README.md.
# The workspace tar writer is its own target (libc + base) so its unit test and the
# writer->reader fuzzer link nothing else.
add_library(stockade_tarwriter STATIC ${CMAKE_CURRENT_LIST_DIR}/tarwriter.c)
target_include_directories(stockade_tarwriter PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(stockade_tarwriter PUBLIC stockade_base)
# The API's JSON renderings of stored records (pure: store's types, jansson, base), apart so
# unit tests link only this.
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson>=2.13)
add_library(stockade_render STATIC ${CMAKE_CURRENT_LIST_DIR}/render.c)
target_include_directories(stockade_render PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(stockade_render PUBLIC stockade_store stockade_base PkgConfig::JANSSON)
# The body field parsers (pure: jansson, base, sessions' plain types), apart for their fuzzer.
add_library(stockade_api_json STATIC ${CMAKE_CURRENT_LIST_DIR}/api_json.c)
target_include_directories(stockade_api_json PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(stockade_api_json PUBLIC stockade_sessions_config stockade_base PkgConfig::JANSSON
                      PRIVATE stockade_proto_limits)
# Forwarding's pure rules (which requests, the URL, headers, the identity check): base only,
# for unit_api_forward. The proxy itself (api_forward.c) is in stockade_api, with libcurl.
add_library(stockade_api_forward_rules STATIC ${CMAKE_CURRENT_LIST_DIR}/api_forward_rules.c)
target_include_directories(stockade_api_forward_rules PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(stockade_api_forward_rules PUBLIC stockade_base)
pkg_check_modules(API_CURL REQUIRED IMPORTED_TARGET libcurl>=7.85)
add_library(stockade_api STATIC ${CMAKE_CURRENT_LIST_DIR}/api.c
            ${CMAKE_CURRENT_LIST_DIR}/routes_sessions.c ${CMAKE_CURRENT_LIST_DIR}/routes_events.c
            ${CMAKE_CURRENT_LIST_DIR}/routes_code.c
            ${CMAKE_CURRENT_LIST_DIR}/routes_files.c ${CMAKE_CURRENT_LIST_DIR}/routes_meta.c
            ${CMAKE_CURRENT_LIST_DIR}/api_auth.c
            ${CMAKE_CURRENT_LIST_DIR}/routes_admin.c ${CMAKE_CURRENT_LIST_DIR}/routes_hosts.c
            ${CMAKE_CURRENT_LIST_DIR}/api_forward.c ${CMAKE_CURRENT_LIST_DIR}/api_forward_hop.c)
target_include_directories(stockade_api PUBLIC ${CMAKE_CURRENT_LIST_DIR})
# PUBLIC: what api.h names; the pool only through pool_status.h (its config and domxml's
# types), never the Pool.
target_link_libraries(stockade_api PUBLIC stockade_http stockade_sessions stockade_store
                      stockade_pool_config stockade_domxml stockade_loop stockade_base
                      PRIVATE stockade_api_json stockade_tarwriter stockade_render stockade_cluster
                      stockade_admit stockade_http_url stockade_proto stockade_api_forward_rules
                      PkgConfig::API_CURL)
