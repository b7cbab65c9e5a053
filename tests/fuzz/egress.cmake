# Egress (issue 7): the numeric-host parser with the address classifier (hostd/egress), and
# the guest proxy's request parser (guest/proxyreq.c). Seeds: tests/fuzz/corpus/<target>/
# (written by tests/fuzz/seeds_egress.py).
stockade_fuzz_target(fuzz_egress_host SOURCES fuzz_egress_host.c LIBS stockade_egress_policy)
stockade_fuzz_target(fuzz_proxyreq SOURCES fuzz_proxyreq.c ${PROJECT_SOURCE_DIR}/guest/proxyreq.c
                     LIBS stockade_proto)
target_include_directories(fuzz_proxyreq_replay PRIVATE ${PROJECT_SOURCE_DIR}/guest)
if(STOCKADE_FUZZ)
    target_include_directories(fuzz_proxyreq PRIVATE ${PROJECT_SOURCE_DIR}/guest)
endif()
# Issue 14: the ClientHello server-name parser and the first-flight inspector (hostd/egress).
# Seeds: tests/fuzz/seeds_egress.py (real hellos from python3's ssl, cut and spliced).
stockade_fuzz_target(fuzz_egress_sni SOURCES fuzz_egress_sni.c LIBS stockade_egress_policy)
