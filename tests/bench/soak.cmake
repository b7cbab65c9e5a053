# tests/bench/run soak runs bench_soak.py against a real stockaded; the smoke run is 2 clients,
# 1 minute.
stockade_bench_smoke(soak sessions_per_min 900)
