# Guest image checks (contract: images/README.md). The image-<name> targets (in ALL) build
# the files; these tests only read them, except noop/rebuild which run the builder again.
if(NOT STOCKADE_IMAGES)
    return()
endif()

set(images_check ${CMAKE_CURRENT_LIST_DIR}/images_check.py)
foreach(name ${STOCKADE_IMAGE_NAMES})
    set(dir ${STOCKADE_IMAGE_DIR}/${name})
    foreach(check manifest vmlinux initramfs)
        stockade_script_test(NAME images_${check}_${name} LABEL integration
                             COMMAND ${STOCKADE_PYTHON3} ${images_check} ${check} ${dir})
    endforeach()
    # data: its real boot is integration_code's (the daemon boots it and its kernel imports
    # numpy, pandas and matplotlib) and its builder path is python's; these two would add
    # ~40 s to CI, which is near its 40 minutes.
    if(name STREQUAL "data")
        continue()
    endif()
    # A test /init loads the image's modules in order, mounts its root, runs python3.
    stockade_script_test(NAME images_guest_${name} LABEL integration TIMEOUT 300
        COMMAND ${STOCKADE_PYTHON3} ${images_check} guest ${dir} 240)
    # Running the builder again with the build's own arguments changes nothing.
    stockade_script_test(NAME images_noop_${name} LABEL integration TIMEOUT 120
        COMMAND ${STOCKADE_PYTHON3} ${images_check} noop ${dir}
                ${STOCKADE_PYTHON3} ${STOCKADE_IMAGE_BUILDER}
                --recipe ${PROJECT_SOURCE_DIR}/images/${name}
                --runner $<TARGET_FILE:stockade-runner>
                --out ${dir} --work ${STOCKADE_IMAGE_WORK})
endforeach()

stockade_script_test(NAME images_root_minimal LABEL integration
    COMMAND ${STOCKADE_PYTHON3} ${images_check} root ${STOCKADE_IMAGE_DIR}/minimal)
stockade_script_test(NAME images_root_python LABEL integration
    COMMAND ${STOCKADE_PYTHON3} ${images_check} root ${STOCKADE_IMAGE_DIR}/python
            /usr/bin/python3 /usr/lib/python3.11/csv.py
            /usr/lib/python3.11/__pycache__/csv.cpython-311.pyc /usr/share/zoneinfo/UTC
            /usr/bin/git /usr/lib/git-core/git-remote-https /usr/bin/curl)
stockade_script_test(NAME images_python_runs LABEL integration TIMEOUT 120
    COMMAND ${STOCKADE_PYTHON3} ${images_check} python ${STOCKADE_IMAGE_DIR}/python)
stockade_script_test(NAME images_data_runs LABEL integration TIMEOUT 300
    COMMAND ${STOCKADE_PYTHON3} ${images_check} data ${STOCKADE_IMAGE_DIR}/data)
stockade_script_test(NAME images_rebuild_minimal LABEL integration TIMEOUT 300
    COMMAND ${STOCKADE_PYTHON3} ${images_check} rebuild ${STOCKADE_IMAGE_DIR}/minimal
            ${STOCKADE_PYTHON3} ${STOCKADE_IMAGE_BUILDER} ${PROJECT_SOURCE_DIR}/images/minimal
            $<TARGET_FILE:stockade-runner> ${STOCKADE_IMAGE_WORK}/cache)
stockade_script_test(NAME images_boot_minimal LABEL integration TIMEOUT 180
    COMMAND ${STOCKADE_PYTHON3} ${images_check} boot ${STOCKADE_IMAGE_DIR}/minimal 150)
