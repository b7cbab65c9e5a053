# tests/bench/run image runs bench_image.py (issue 29: an OCI image's import against tar -xzf
# of the same layers, and a new pool's first guest). The smoke imports a small image, no guest.
stockade_bench_smoke(image import_mib_per_s 600)
