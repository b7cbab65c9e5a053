# Fuzz targets for the daemon's hostile inputs besides the channel: its config file and the
# API's JSON request bodies (issue 8). Corpora under corpus/<target>/.
stockade_fuzz_target(fuzz_config SOURCES fuzz_config.c LIBS stockade_config)
stockade_fuzz_target(fuzz_api_json SOURCES fuzz_api_json.c LIBS stockade_api_json stockade_proto_limits)
# The code kernel's lines (issue 18): hostile guest output the host parses and re-serialises.
stockade_fuzz_target(fuzz_code_line SOURCES fuzz_code_line.c LIBS stockade_code_wire)
# A guest's file records after proto's checks (issue 31): the live mirror's step, a fetched
# file's reassembly, a finalize's chunk check, FsResult entries (hostd/sessions/
# guest_replies.c). Seeds: tests/fuzz/seeds_guest_replies.py.
stockade_fuzz_target(fuzz_guest_replies SOURCES fuzz_guest_replies.c LIBS stockade_guest_replies)
# The owner's answer to a forwarded request (issue 31): its header lines as the hop keeps and
# repeats them, and the stream-or-buffer decision (hostd/api/api_forward_rules.c).
# Seeds: corpus/fuzz_forward_answer/seed_*.
stockade_fuzz_target(fuzz_forward_answer SOURCES fuzz_forward_answer.c
                     LIBS stockade_api_forward_rules)
# An image's manifest.json (issue 31) as the daemon (hostd/pool/image.c) and the CLI's image
# check (tools/images.c, on a scratch image folder) read it. Seeds: tests/fuzz/seeds_image_manifest.py.
stockade_fuzz_target(fuzz_image_manifest SOURCES fuzz_image_manifest.c fuzz_image_manifest_cli.c
                     LIBS stockade_pool_image stockade_cli)
# A log line whose message carries hostile bytes (issue 30): every form one bounded line, the
# JSON form one object that jansson parses. Seeds: corpus/fuzz_log_line/seed_*.
pkg_check_modules(STOCKADE_FUZZ_JANSSON REQUIRED IMPORTED_TARGET jansson)
stockade_fuzz_target(fuzz_log_line SOURCES fuzz_log_line.c LIBS PkgConfig::STOCKADE_FUZZ_JANSSON)
# A paused clone's stored state (issue 27): the file read back (hostile: size, checksum,
# template, inflation bounded) and the filter over QEMU's stream (the result does not depend
# on how the stream is cut; what it writes reads back). Seeds: tests/fuzz/seeds_pausefile.py.
stockade_fuzz_target(fuzz_pausefile SOURCES fuzz_pausefile.c LIBS stockade_pausefile)
