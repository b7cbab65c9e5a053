# hostd/sessions: the per-session cap on events a workload makes without limit, through the real
# mirror and event code into a real SQLite file (the rest of the module is tested with real
# guests in tests/integration/sessions.cmake).
# Also: nothing from the guest is recorded after a session's end. A finalize the runner never
# answers gives way to the salvage at its deadline; one whose runner streams mirror records
# instead of its manifest ends at its base (records the mirror ignores) or its session's
# reserved lifetime (records it stores), and a cancel during a finalize salvages at once
# (issue 25). A task cancelled during its upload ends cancelled, once (issue 26).
# A session whose egress cannot be set up never gets a Hello and ends host_error: the one
# link-time seam left (--wrap) injects that allocation failure in the egress module.
# The sessions run on the fake host of sessions_fake.c (pool, guests' channels, salvage):
# no libvirt is linked.
stockade_test(NAME unit_sessions_events LABEL unit SOURCES test_sessions_events.c sessions_fake.c
              LIBS stockade_sessions stockade_egress stockade_render PkgConfig::CMOCKA)
target_link_options(unit_sessions_events PRIVATE -Wl,--wrap=egress_session_new)

# hostd/sessions/session_state.c: every move of the table, allowed and refused, driven through
# the real module on the fake host (a refused move changes nothing: no event, no record);
# the end reasons each move takes; sessions_watch (called after a change, never inside it,
# folded per turn, unwatch inside the call, the cap). Issue 26.
stockade_test(NAME unit_sessions_states LABEL unit SOURCES test_sessions_states.c sessions_fake.c
              LIBS stockade_sessions stockade_egress PkgConfig::CMOCKA)

# hostd/sessions: artifact retention's removal job on a real SQLite file.
stockade_test(NAME unit_sessions_artifacts LABEL unit SOURCES test_sessions_artifacts.c
              LIBS stockade_sessions stockade_egress stockade_store PkgConfig::CMOCKA)

# hostd/sessions/code_wire.c: the code kernel's lines (hostile) and the request line.
stockade_test(NAME unit_code_wire LABEL unit SOURCES test_code_wire.c
              LIBS stockade_code_wire PkgConfig::CMOCKA)
