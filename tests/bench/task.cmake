# tests/bench/run task runs bench_task.py against a real stockaded (issue 13: what a task costs
# beyond its work).
stockade_bench_smoke(task task_overhead_p50_ms 900)
