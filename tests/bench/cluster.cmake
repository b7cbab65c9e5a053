# tests/bench/run cluster runs bench_cluster.py (issue 16): bench_cluster_admit (admissions/s
# through PostgreSQL vs SQLite) on a throw-away PostgreSQL, then routed GETs and a host's
# loss on three real stockaded sharing another.
find_package(Threads REQUIRED)
add_executable(bench_cluster_admit ${CMAKE_CURRENT_LIST_DIR}/bench_cluster_admit.c)
target_link_libraries(bench_cluster_admit PRIVATE stockade_cluster stockade_store stockade_testlib
                      Threads::Threads)
stockade_bench_smoke(cluster host_lost_after_heartbeat_s 1200)
