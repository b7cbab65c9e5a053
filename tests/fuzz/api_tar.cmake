# hostd/api: the workspace tar writer, read back by hostd/extract's reader (issue 14: a
# guest's long file name must never let its content be read as headers). Corpus:
# tests/fuzz/corpus/fuzz_tarwriter/ (seeds_tarwriter.py, then libFuzzer runs).
stockade_fuzz_target(fuzz_tarwriter SOURCES fuzz_tarwriter.c
                     LIBS stockade_tarwriter stockade_extract_untar stockade_testlib)
