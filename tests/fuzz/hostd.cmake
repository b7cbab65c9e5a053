# Fuzz targets for the daemon's hostile inputs besides the channel: its config file and the
# API's JSON request bodies (issue 8). Corpora under corpus/<target>/.
stockade_fuzz_target(fuzz_config SOURCES fuzz_config.c LIBS stockade_config)
stockade_fuzz_target(fuzz_api_json SOURCES fuzz_api_json.c LIBS stockade_api_json stockade_proto_limits)
