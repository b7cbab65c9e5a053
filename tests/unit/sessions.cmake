# hostd/sessions: the per-session cap on events a workload makes without limit, through the real
# mirror and event code into a real SQLite file (the rest of the module is tested with real
# guests in tests/integration/sessions.cmake).
stockade_test(NAME unit_sessions_events LABEL unit SOURCES test_sessions_events.c
              LIBS stockade_sessions PkgConfig::CMOCKA)

# hostd/sessions: artifact retention's removal job on a real SQLite file.
stockade_test(NAME unit_sessions_artifacts LABEL unit SOURCES test_sessions_artifacts.c
              LIBS stockade_sessions stockade_store PkgConfig::CMOCKA)

# hostd/sessions/code_wire.c: the code kernel's lines (hostile) and the request line.
stockade_test(NAME unit_code_wire LABEL unit SOURCES test_code_wire.c
              LIBS stockade_sessions PkgConfig::CMOCKA)
