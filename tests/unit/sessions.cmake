# hostd/sessions: the per-session cap on events a workload makes without limit, through the real
# mirror and event code into a real SQLite file (the rest of the module is tested with real
# guests in tests/integration/sessions.cmake).
# Also: nothing from the guest is recorded after a session's end; the pool's release is
# wrapped (the test's guest is a token, not a domain). A finalize the runner never answers
# gives way to the salvage at its deadline (guest_send and guest_workspace_path wrapped too);
# one whose runner streams mirror records instead of its manifest ends at its base (records
# the mirror ignores) or its session's reserved lifetime (records it stores), and a cancel
# during a finalize salvages at once (issue 25).
# A session whose egress cannot be set up never gets a Hello and ends host_error.
stockade_test(NAME unit_sessions_events LABEL unit SOURCES test_sessions_events.c
              LIBS stockade_sessions stockade_pool stockade_egress stockade_render PkgConfig::CMOCKA)
target_link_options(unit_sessions_events PRIVATE -Wl,--wrap=pool_release
                    -Wl,--wrap=guest_send -Wl,--wrap=guest_workspace_path
                    -Wl,--wrap=guest_hello -Wl,--wrap=guest_name -Wl,--wrap=guest_disk_index
                    -Wl,--wrap=egress_session_new)

# hostd/sessions: artifact retention's removal job on a real SQLite file.
stockade_test(NAME unit_sessions_artifacts LABEL unit SOURCES test_sessions_artifacts.c
              LIBS stockade_sessions stockade_pool stockade_egress stockade_store PkgConfig::CMOCKA)

# hostd/sessions/code_wire.c: the code kernel's lines (hostile) and the request line.
stockade_test(NAME unit_code_wire LABEL unit SOURCES test_code_wire.c
              LIBS stockade_code_wire PkgConfig::CMOCKA)
