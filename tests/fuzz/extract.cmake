# hostd/extract: the tar parser + name check (pure), and extract_untar() end to end into a
# scratch directory. Seeds: tests/fuzz/corpus/fuzz_untar*/ (how they were made: hostd/extract/README.md).
stockade_fuzz_target(fuzz_untar SOURCES fuzz_untar.c LIBS stockade_extract_untar)
stockade_fuzz_target(fuzz_untar_fs SOURCES fuzz_untar_fs.c LIBS stockade_extract_untar)
# hostd/extract/manifest_check.c behind proto/'s checks: a lying runner's finalize manifest.
# Seeds: tests/fuzz/seeds_manifest.py.
stockade_fuzz_target(fuzz_manifest SOURCES fuzz_manifest.c LIBS stockade_extract_untar stockade_proto)
