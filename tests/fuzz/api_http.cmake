# hostd/api: the HTTP layer's request-target parsing (path segments, percent-decoding,
# query). Seeds: tests/fuzz/corpus/fuzz_http_url/ (hand-written hostile targets).
stockade_fuzz_target(fuzz_http_url SOURCES api_http_fuzz_url.c LIBS stockade_http_url)
