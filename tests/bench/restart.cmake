# tests/bench/run restart runs bench_restart.py against a real stockaded (issue 30).
stockade_bench_smoke(restart restart_to_first_exec_s 1800 CHECKS output_bytes_lost sessions_ended)
