# tools/ (the stockade CLI): pure pieces (arguments, output, events, error mapping, exit codes)
# and file handling (hostile workspace tars, uploads), doctor's cluster verdict; did you mean,
# token files and their precedence, tenants by name or id, exit 127 (issue 30). No daemon.
stockade_test(NAME unit_cli LABEL unit SOURCES cli_test.c
              LIBS stockade_cli PkgConfig::CMOCKA)
stockade_test(NAME unit_cli_files LABEL unit SOURCES cli_test_files.c
              LIBS stockade_cli PkgConfig::CMOCKA)
stockade_test(NAME unit_cli_doctor LABEL unit SOURCES cli_test_doctor.c
              LIBS stockade_cli PkgConfig::CMOCKA)
stockade_test(NAME unit_cli_admin LABEL unit SOURCES cli_test_admin.c
              LIBS stockade_cli PkgConfig::CMOCKA)
