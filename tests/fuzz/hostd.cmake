# Fuzz targets for the daemon's hostile inputs besides the channel: its config file and the
# API's JSON request bodies (issue 8). Corpora under corpus/<target>/.
stockade_fuzz_target(fuzz_config SOURCES fuzz_config.c LIBS stockade_config)
stockade_fuzz_target(fuzz_api_json SOURCES fuzz_api_json.c LIBS stockade_api_json stockade_proto_limits)
# The code kernel's lines (issue 18): hostile guest output the host parses and re-serialises.
stockade_fuzz_target(fuzz_code_line SOURCES fuzz_code_line.c LIBS stockade_code_wire)
