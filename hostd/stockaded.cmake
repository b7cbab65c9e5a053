# The stockaded executable: main.c (arguments, config, signals) + daemon.c (wiring) +
# config.c (pure parser, also fuzzed and unit-tested through stockade_config).
add_library(stockade_config STATIC ${CMAKE_CURRENT_LIST_DIR}/config.c)
target_include_directories(stockade_config PUBLIC ${CMAKE_CURRENT_LIST_DIR})
# Only the modules' config libraries (plain C): no libvirt, libpq, libguestfs or MHD.
target_link_libraries(stockade_config PUBLIC stockade_cluster_config stockade_pool_config
                      stockade_sessions_config stockade_http_config stockade_e2b_config
                      stockade_egress_policy stockade_base PRIVATE stockade_proto_limits)

set(STOCKADE_INSTALL_IMAGE_DIR ${CMAKE_INSTALL_FULL_DATADIR}/stockade/images)
add_executable(stockaded ${CMAKE_CURRENT_LIST_DIR}/main.c ${CMAKE_CURRENT_LIST_DIR}/daemon.c
               ${CMAKE_CURRENT_LIST_DIR}/daemon_notify.c)
target_compile_definitions(stockaded PRIVATE
    STOCKADE_INSTALL_IMAGE_DIR="${STOCKADE_INSTALL_IMAGE_DIR}"
    STOCKADE_BUILD_IMAGE_DIR="${STOCKADE_IMAGE_DIR}")
target_link_libraries(stockaded PRIVATE stockade_config stockade_api stockade_e2b
                      stockade_sessions stockade_cluster stockade_store stockade_pool stockade_loop stockade_base)
install(TARGETS stockaded RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
