# hostd/extract: the pure parts (tar parser, safe writer, name checks, pre-scan decoder).
stockade_test(NAME unit_extract LABEL unit SOURCES test_extract.c
              LIBS stockade_extract_untar stockade_base PkgConfig::CMOCKA)
# hostd/extract/manifest_check.c: what a lying runner may claim at a clean end (finalize), as a table.
stockade_test(NAME unit_manifest LABEL unit SOURCES test_manifest.c
              LIBS stockade_extract_untar stockade_base PkgConfig::CMOCKA)

# The appliance qemu wrapper's argv rewrite (what qemu may open by path), with fake fds.
stockade_test(NAME unit_appliance_qemu LABEL unit SOURCES test_appliance_qemu.c
              LIBS stockade_appliance_qemu_args stockade_base PkgConfig::CMOCKA)

# hostd/extract/extract_service.c: the appliance's life cycle (launch, wait, cold fallback,
# relaunch on death and for KVM, stop) on a real loop and work queue, the libguestfs calls
# wrapped with fakes.
stockade_test(NAME unit_extract_service LABEL unit SOURCES test_extract_service.c
              LIBS stockade_extract stockade_loop stockade_base PkgConfig::CMOCKA)
target_link_options(unit_extract_service PRIVATE -Wl,--wrap=extract_appliance_start
                    -Wl,--wrap=extract_salvage -Wl,--wrap=extract_salvage_cold
                    -Wl,--wrap=extract_appliance_alive -Wl,--wrap=extract_appliance_free)
