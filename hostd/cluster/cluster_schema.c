/* The cluster's schema. Each entry migrates from version i to i + 1 in one transaction,
 * under the advisory lock (cluster.c). Never edit a released entry: append. */
#include "cluster_internal.h"

const char *const cluster_migrations[] = {
    /* 1: tenants, tokens (hashes only), quotas, hosts, the session index and the ledger.
     * Same rules as the SQLite store (hostd/store/store.c): the ledger is append-only and
     * each reservation ends exactly once; triggers refuse a second end, a delete and a
     * truncate, and a reservation's terms never change after it is written. */
    "CREATE TABLE tenants ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  created_usec BIGINT NOT NULL,"
    "  bucket_level_milli BIGINT NOT NULL DEFAULT 0 CHECK (bucket_level_milli >= 0),"
    "  bucket_usec BIGINT NOT NULL DEFAULT 0"
    ");"
    "INSERT INTO tenants (id, name, created_usec) VALUES ('default', 'default', 0);"
    "CREATE TABLE tokens ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  hash BYTEA NOT NULL UNIQUE CHECK (length(hash) = 32),"
    "  admin BOOLEAN NOT NULL DEFAULT false,"
    "  created_usec BIGINT NOT NULL,"
    "  revoked_usec BIGINT NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX tokens_by_tenant ON tokens(tenant_id);"
    "CREATE TABLE quotas ("
    "  tenant_id TEXT PRIMARY KEY REFERENCES tenants(id),"
    "  max_sessions BIGINT NOT NULL CHECK (max_sessions >= 0),"
    "  wallet_guest_seconds BIGINT NOT NULL CHECK (wallet_guest_seconds >= 0),"
    "  max_vcpus BIGINT NOT NULL CHECK (max_vcpus >= 0),"
    "  max_memory_mib BIGINT NOT NULL CHECK (max_memory_mib >= 0),"
    "  max_timeout_s BIGINT NOT NULL CHECK (max_timeout_s >= 0),"
    "  sessions_per_minute BIGINT NOT NULL CHECK (sessions_per_minute >= 0),"
    "  output_bytes BIGINT NOT NULL CHECK (output_bytes >= 0),"
    "  workspace_bytes BIGINT NOT NULL CHECK (workspace_bytes >= 0)"
    ");"
    "CREATE TABLE hosts ("
    "  id TEXT PRIMARY KEY,"
    "  url TEXT NOT NULL,"
    "  started_usec BIGINT NOT NULL,"
    "  heartbeat_usec BIGINT NOT NULL,"
    "  accel TEXT NOT NULL DEFAULT '',"
    "  pools JSONB NOT NULL DEFAULT '[]'"
    ");"
    "CREATE TABLE sessions ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  host_id TEXT NOT NULL REFERENCES hosts(id),"
    "  state TEXT NOT NULL CHECK (state IN ('pending','live','ended')),"
    "  created_usec BIGINT NOT NULL,"
    "  ended_usec BIGINT NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX sessions_by_host ON sessions(host_id, state);"
    "CREATE TABLE reservations ("
    "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  session_id TEXT NOT NULL UNIQUE REFERENCES sessions(id),"
    "  vcpus BIGINT NOT NULL CHECK (vcpus >= 0),"
    "  reserved_guest_s BIGINT NOT NULL CHECK (reserved_guest_s >= 0),"
    "  output_bytes BIGINT NOT NULL,"
    "  workspace_bytes BIGINT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open','charged','released')),"
    "  charged_guest_s BIGINT NOT NULL DEFAULT 0"
    "    CHECK (charged_guest_s >= 0 AND charged_guest_s <= reserved_guest_s),"
    "  created_usec BIGINT NOT NULL,"
    "  ended_usec BIGINT NOT NULL DEFAULT 0,"
    "  CHECK (state <> 'released' OR charged_guest_s = 0)"
    ");"
    "CREATE INDEX reservations_by_tenant ON reservations(tenant_id, state);"
    "CREATE INDEX reservations_open ON reservations(state) WHERE state = 'open';"
    "CREATE FUNCTION stockade_reservation_end_once() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF OLD.state <> 'open' THEN RAISE EXCEPTION 'a reservation ends exactly once'; END IF;"
    "  IF NEW.id <> OLD.id OR NEW.tenant_id <> OLD.tenant_id OR NEW.session_id <> OLD.session_id"
    "     OR NEW.vcpus <> OLD.vcpus OR NEW.reserved_guest_s <> OLD.reserved_guest_s"
    "     OR NEW.created_usec <> OLD.created_usec THEN"
    "   RAISE EXCEPTION 'a reservation''s terms never change';"
    "  END IF;"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER reservations_end_once BEFORE UPDATE ON reservations"
    "  FOR EACH ROW EXECUTE FUNCTION stockade_reservation_end_once();"
    "CREATE FUNCTION stockade_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN RAISE EXCEPTION 'the ledger is append-only'; END $$;"
    "CREATE TRIGGER reservations_append_only BEFORE DELETE ON reservations"
    "  FOR EACH ROW EXECUTE FUNCTION stockade_ledger_append_only();"
    "CREATE TRIGGER reservations_no_truncate BEFORE TRUNCATE ON reservations"
    "  FOR EACH STATEMENT EXECUTE FUNCTION stockade_ledger_append_only();",
    /* 2: tenants and tokens are the cluster's (cluster_tenancy.c). Every write of either
     * takes a number from tenancy_changes while it holds CLUSTER_TENANCY_LOCK_KEY, so the
     * numbers commit in order and a host that has read up to N has every change <= N; 0 is a
     * row no host needs (the built-in tenant, a tenant admission made for its ledger rows).
     * A token is never deleted and its revocation never undone: a host that missed the
     * change would keep a copy that still authenticates. */
    "CREATE SEQUENCE tenancy_changes;"
    "ALTER TABLE tenants ADD COLUMN changed_seq BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE tokens ADD COLUMN changed_seq BIGINT NOT NULL DEFAULT 0;"
    "CREATE INDEX tenants_by_change ON tenants(changed_seq) WHERE changed_seq > 0;"
    "CREATE INDEX tokens_by_change ON tokens(changed_seq);"
    "CREATE FUNCTION stockade_token_terms() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF OLD.revoked_usec <> 0 AND NEW.revoked_usec <> OLD.revoked_usec THEN"
    "   RAISE EXCEPTION 'a revocation is never undone';"
    "  END IF;"
    "  IF NEW.id <> OLD.id OR NEW.tenant_id <> OLD.tenant_id OR NEW.hash <> OLD.hash"
    "     OR NEW.admin <> OLD.admin OR NEW.created_usec <> OLD.created_usec THEN"
    "   RAISE EXCEPTION 'a token''s terms never change';"
    "  END IF;"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER tokens_terms BEFORE UPDATE ON tokens"
    "  FOR EACH ROW EXECUTE FUNCTION stockade_token_terms();"
    "CREATE FUNCTION stockade_tokens_kept() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN RAISE EXCEPTION 'tokens are never deleted: revoke them'; END $$;"
    "CREATE TRIGGER tokens_kept BEFORE DELETE ON tokens"
    "  FOR EACH ROW EXECUTE FUNCTION stockade_tokens_kept();"
    "CREATE TRIGGER tokens_no_truncate BEFORE TRUNCATE ON tokens"
    "  FOR EACH STATEMENT EXECUTE FUNCTION stockade_tokens_kept();",
    /* 3: a host that dies (cluster_takeover.c). lost_usec (the database's clock) is when
     * another host, lost_by, took its sessions over; 0 while it is live. alive_since_usec is
     * the first heartbeat after a gap: only a host that has beaten without a gap for a whole
     * lease may take another over, so a database that was away makes no host look dead.
     * end_reason is 'host_lost' on the index rows a takeover ended, '' otherwise: the
     * returning host reads it to end its own records the same way. */
    "ALTER TABLE hosts ADD COLUMN lost_usec BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN lost_by TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE hosts ADD COLUMN alive_since_usec BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE sessions ADD COLUMN end_reason TEXT NOT NULL DEFAULT ''"
    "  CHECK (end_reason IN ('', 'host_lost'));",
    /* 4: where each host's E2B faces listen (hostd/e2b, "Cluster"): http://<advertise_url's
     * host>:<port>, '' when the host runs none. Written by the host once its listeners are
     * bound (cluster_e2b_publish), read by the others to proxy a sandbox's calls to it. */
    "ALTER TABLE hosts ADD COLUMN e2b_api_url TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE hosts ADD COLUMN e2b_envd_url TEXT NOT NULL DEFAULT '';",
    /* 5: a tenant can be removed (issue 30, cluster_tenant_remove): removed_usec is when, 0
     * while it is live. The row stays (the ledger and the index name it); its name is free
     * again, so names are unique among live tenants. A removal is never undone (as a
     * revocation): a host that missed it would keep a live copy. Admission refuses a removed
     * tenant (cluster_admit reads it under the row lock). */
    "ALTER TABLE tenants ADD COLUMN removed_usec BIGINT NOT NULL DEFAULT 0"
    "  CHECK (removed_usec >= 0);"
    "ALTER TABLE tenants DROP CONSTRAINT tenants_name_key;"
    "CREATE UNIQUE INDEX tenants_live_name ON tenants(name) WHERE removed_usec = 0;"
    "CREATE FUNCTION stockade_tenant_removed_kept() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF OLD.removed_usec <> 0 AND NEW.removed_usec <> OLD.removed_usec THEN"
    "   RAISE EXCEPTION 'a removal is never undone';"
    "  END IF;"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER tenants_removed_kept BEFORE UPDATE ON tenants"
    "  FOR EACH ROW EXECUTE FUNCTION stockade_tenant_removed_kept();",
};

const size_t cluster_n_migrations = ELEMENTSOF(cluster_migrations);
