# Egress (issue 7): the numeric-host parser, the IANA special-purpose address classifier, the
# allow-list matcher with ports, the ClientHello parser and first-flight inspector (hostd/egress,
# pure; issue 14), the tunnel's flow-control arithmetic (proto/flow.c)
# and the guest proxy's request parser (guest/proxyreq.c).
foreach(part host classify policy sni)
    stockade_test(NAME unit_egress_${part} LABEL unit SOURCES test_egress_${part}.c
                  LIBS stockade_egress_policy PkgConfig::CMOCKA)
endforeach()
stockade_test(NAME unit_proto_flow LABEL unit SOURCES test_proto_flow.c
              LIBS stockade_proto stockade_base PkgConfig::CMOCKA)
stockade_test(NAME unit_guest_proxyreq LABEL unit SOURCES test_guest_proxyreq.c
              ${PROJECT_SOURCE_DIR}/guest/proxyreq.c
              LIBS stockade_proto stockade_base PkgConfig::CMOCKA)
target_include_directories(unit_guest_proxyreq PRIVATE ${PROJECT_SOURCE_DIR}/guest)
stockade_test(NAME unit_config_egress LABEL unit SOURCES test_config_egress.c
              LIBS stockade_config PkgConfig::CMOCKA)
