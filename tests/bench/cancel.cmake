# tests/bench/run cancel runs bench_cancel.py against a real stockaded.
stockade_bench_smoke(cancel cancel_to_artifacts_p50_s 900)
