# hostd/http: the HTTP layer's request-target parsing (path segments, percent-decoding,
# query). Corpus: tests/fuzz/corpus/fuzz_http_url/: hand-written hostile targets (seed_*)
# plus the inputs 12M libFuzzer runs added coverage with (merged with -merge=1).
stockade_fuzz_target(fuzz_http_url SOURCES api_http_fuzz_url.c LIBS stockade_http_url)
# The TCP front door's head scan (http_accept.c through http_hello.c): the blank line found
# in growing peeks exactly where a plain search finds it. Seeds: corpus/fuzz_http_head/seed_*.
stockade_fuzz_target(fuzz_http_head SOURCES fuzz_http_head.c LIBS stockade_http_url)
