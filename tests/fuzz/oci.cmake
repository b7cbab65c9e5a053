# hostd/oci (issue 29): the OCI layout's JSON documents, one layer applied onto a scratch root
# (decoding included), and the runner's reader of an image's exec defaults (guest/imagecfg.c).
# Seeds: tests/fuzz/seeds_oci.py.
stockade_fuzz_target(fuzz_oci_json SOURCES fuzz_oci_json.c LIBS stockade_oci_json)
stockade_fuzz_target(fuzz_oci_layer SOURCES fuzz_oci_layer.c LIBS stockade_oci)
stockade_fuzz_target(fuzz_imagecfg SOURCES fuzz_imagecfg.c ${PROJECT_SOURCE_DIR}/guest/imagecfg.c
                     ${PROJECT_SOURCE_DIR}/guest/env.c LIBS stockade_proto)
target_include_directories(fuzz_imagecfg_replay PRIVATE ${PROJECT_SOURCE_DIR}/guest)
if(STOCKADE_FUZZ)
    target_include_directories(fuzz_imagecfg PRIVATE ${PROJECT_SOURCE_DIR}/guest)
endif()
# The Dockerfile parser and word expansion of `stockade image build --file`.
stockade_fuzz_target(fuzz_dockerfile SOURCES fuzz_dockerfile.c LIBS stockade_oci_json)
