# Cluster mode (issue 31): rows other hosts wrote, decoded by hostd/cluster/cluster_rows.c (no
# libpq), the tenancy pull merged into a real SQLite store (store_sync_apply), the hosts list,
# and published E2B listener URLs. Seeds: corpus/fuzz_cluster_rows/seed_* (COPY-text rows).
stockade_fuzz_target(fuzz_cluster_rows SOURCES fuzz_cluster_rows.c
                     LIBS stockade_cluster_rows stockade_store)
