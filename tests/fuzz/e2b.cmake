# E2B compatibility (issue 9): the envd face's Connect envelope decoder with the JSON request
# parsers behind it, and multipart uploads with the path mapping. Seeds: corpus/<target>/
# (written by tests/fuzz/seeds_e2b.py).
stockade_fuzz_target(fuzz_e2b_connect SOURCES fuzz_e2b_connect.c LIBS stockade_e2b_wire)
stockade_fuzz_target(fuzz_e2b_multipart SOURCES fuzz_e2b_multipart.c LIBS stockade_e2b_wire)
# Signed /files URLs (issue 31): the query's parts and the signature check; a URL signed for
# one path, operation, username and expiration opens that request only. Seeds:
# corpus/fuzz_e2b_signed_url/seed_*.
stockade_fuzz_target(fuzz_e2b_signed_url SOURCES fuzz_e2b_signed_url.c LIBS stockade_e2b_wire)
