# tests/bench/run code runs bench_code.py against a real stockaded with a data pool (issue 18:
# what a code context's first and warm runs cost beside a plain exec).
stockade_bench_smoke(code first_run_code_over_echo 1800)
