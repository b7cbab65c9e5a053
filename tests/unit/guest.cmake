# Unit tests of the runner's pure logic (guest/): environment building and PATH search, the
# kernel command line and module list, workspace path decisions (cwd mapping, confinement
# against symlinks), error mapping and req_id peeking, the outbound queue's bounds, the
# virtio port lookup over a fake sysfs; an imported image's exec defaults (imagecfg.c).
foreach(part env bootcfg paths outq imagecfg)
    stockade_test(NAME unit_guest_${part} LABEL unit SOURCES test_guest_${part}.c
                  ${STOCKADE_GUEST_PURE_SOURCES}
                  LIBS stockade_proto stockade_base PkgConfig::CMOCKA)
    target_include_directories(unit_guest_${part} PRIVATE ${PROJECT_SOURCE_DIR}/guest)
endforeach()
