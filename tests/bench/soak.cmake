# tests/bench/run soak runs bench_soak.py against a real stockaded; the smoke run is 2 clients,
# 1 minute. It fails on a ledger problem (an open reservation, charged + released != created)
# or anything a clean stop leaves behind (docs/hardening.md, "Soak and load").
stockade_bench_smoke(soak sessions_per_min 900
                     CHECKS ledger_problems leaked_domains leaked_files)
