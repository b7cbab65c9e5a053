# `stockade image import` (issue 29): honest OCI layouts (umoci, real skopeo) and docker save
# tarballs, and one hostile layout per case (hostd/oci's own checks, through a skopeo
# stand-in) read back with debugfs: no guest. Then one daemon, one guest of an imported image:
# its Env, WorkingDir and User are the execs' defaults.
find_program(STOCKADE_TEST_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME integration_image_import
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_image_import.py)
set_tests_properties(integration_image_import PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
add_test(NAME integration_image_import_guest
         COMMAND ${STOCKADE_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_image_import_guest.py)
set_tests_properties(integration_image_import_guest PROPERTIES LABELS integration
    SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
    ENVIRONMENT "STOCKADE_BUILD_DIR=${CMAKE_BINARY_DIR};STOCKADE_IMAGE_DIR=${STOCKADE_IMAGE_DIR}")
