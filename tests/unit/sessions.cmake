# hostd/sessions: artifact retention's removal job on a real SQLite file.
stockade_test(NAME unit_sessions_artifacts LABEL unit SOURCES test_sessions_artifacts.c
              LIBS stockade_sessions stockade_store PkgConfig::CMOCKA)
