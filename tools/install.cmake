# What `cmake --install BUILD [--prefix PREFIX]` puts where (default prefix /usr/local):
#
#   bin/stockade                              the operator CLI
#   sbin/stockaded                            the daemon (rule in hostd/stockaded.cmake)
#   sbin/stockade-appliance-qemu              the extraction appliance's unprivileged qemu
#                                             launcher, found beside stockaded (hostd/extract)
#   share/stockade/images/<name>/             vmlinux, initramfs.cpio, root.ext4, manifest.json
#                                             (stockaded and `stockade doctor` look here first)
#   libexec/stockade/stockade-runner          the static guest runner (for image builds)
#   libexec/stockade/images/                  the image builder and recipes (`stockade image
#                                             build NAME`)
#   lib/systemd/system/stockaded.service      systemd unit (STOCKADE_SYSTEMD_UNIT_DIR)
#   /etc/stockade/stockaded.conf              every key, commented out, with its default;
#                                             installed only when absent (STOCKADE_CONFIG_DIR)
#   share/doc/stockade/stockaded.conf.example the same file, always refreshed
#   share/man/man1/stockade.1, man8/stockaded.8
set(STOCKADE_SYSTEMD_UNIT_DIR "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" CACHE PATH
    "Where stockaded.service is installed (systemd also reads /usr/local/lib/systemd/system)")
set(STOCKADE_CONFIG_DIR "/etc/stockade" CACHE PATH
    "Where the default stockaded.conf goes (stockaded reads /etc/stockade/stockaded.conf)")

install(TARGETS stockade RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Guest images, as built into ${STOCKADE_IMAGE_DIR} (not the builder's .build/ cache).
if(STOCKADE_IMAGES)
    foreach(name ${STOCKADE_IMAGE_NAMES})
        set(dir ${STOCKADE_IMAGE_DIR}/${name})
        install(FILES ${dir}/vmlinux ${dir}/initramfs.cpio ${dir}/root.ext4 ${dir}/manifest.json
                DESTINATION ${CMAKE_INSTALL_DATADIR}/stockade/images/${name})
    endforeach()
endif()

# The image builder, its recipes and the runner it packs, for `stockade image build`.
set(images_src ${PROJECT_SOURCE_DIR}/images)
set(libexec ${CMAKE_INSTALL_LIBEXECDIR}/stockade)
install(PROGRAMS $<TARGET_FILE:stockade-runner> DESTINATION ${libexec})
install(PROGRAMS ${images_src}/build-image.py ${images_src}/pack-image.py DESTINATION ${libexec}/images)
install(FILES ${images_src}/common.json DESTINATION ${libexec}/images)
install(DIRECTORY ${images_src}/builder DESTINATION ${libexec}/images FILES_MATCHING
        PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY ${images_src}/overlay DESTINATION ${libexec}/images)
foreach(name ${STOCKADE_IMAGE_NAMES})
    install(DIRECTORY ${images_src}/${name} DESTINATION ${libexec}/images)
endforeach()

# systemd unit, with the installed daemon's path.
set(STOCKADE_SBIN_FULL ${CMAKE_INSTALL_FULL_SBINDIR})
configure_file(${CMAKE_CURRENT_LIST_DIR}/stockaded.service.in
               ${CMAKE_CURRENT_BINARY_DIR}/stockaded.service @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/stockaded.service DESTINATION ${STOCKADE_SYSTEMD_UNIT_DIR})

# Default configuration: never overwrite an operator's file.
set(conf_src ${CMAKE_CURRENT_LIST_DIR}/stockaded.conf)
install(FILES ${conf_src} DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME stockaded.conf.example)
install(CODE "
    if(EXISTS \"\$ENV{DESTDIR}${STOCKADE_CONFIG_DIR}/stockaded.conf\")
        message(STATUS \"Kept: \$ENV{DESTDIR}${STOCKADE_CONFIG_DIR}/stockaded.conf (the new \"
                       \"defaults are in ${CMAKE_INSTALL_FULL_DOCDIR}/stockaded.conf.example)\")
    else()
        file(INSTALL DESTINATION \"${STOCKADE_CONFIG_DIR}\" TYPE FILE FILES \"${conf_src}\")
    endif()")

install(FILES ${CMAKE_CURRENT_LIST_DIR}/man/stockade.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/man/stockaded.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
