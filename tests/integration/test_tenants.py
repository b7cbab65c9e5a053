#!/usr/bin/env python3
"""Integration tests of tenants, tokens and quotas (issue 5) against a real stockaded, real
libvirtd and real guests. One scenario per run:

    test_tenants.py concurrent|ledger|wallet|isolation|revoked

  concurrent  100 creates at once with 1 session slot left: exactly 1 passes, 99 get 429
              with the limit; the pool hands out that one guest and restores nothing
  ledger      sessions of every kind, kill -9 mid-session, restart: every reservation ended
              exactly once and the wallet equals the sum of vcpus x (ended - started)
  wallet      an empty wallet is 429 before any guest is touched; the per-session caps,
              the rate limit and the output cap
  isolation   tenant A's token on tenant B's session: 404 on every session route; and tenant
              A's four trickled 64 MiB uploads (the whole default body budget, declared) hold
              only A's share of it, so B's create is answered while A trickles; the held
              ones are cut for the minimum body rate
  revoked     a revoked token is 401, so is a missing or malformed one; operator tokens
              (with it, no guests: a tenant removed, issue 30: refused 409 with its pending
              session counted, then with ?cancel=1 the session ends tenant_removed and is
              released, both tokens 401; idempotent; nothing admitted, issued or set for it
              after, not even by an operator acting for it; its usage kept; the name free;
              default, unknown and malformed ids and bad flags refused)
"""
import http.client
import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon, ledger_rows, ledger_want_charge, wall  # noqa: E402

MINIMAL = {"minimal": dict(warm=1, slots=2)}
WALLET_ONE = 300  # guest-seconds: one 1-vCPU session of 300 s; it runs and ends well within


# ------------------------------------------------------------------ helpers

def new_tenant(d, name, **quota):
    """A tenant (over the unix socket, as an operator) with its first token and quota."""
    t = d.unix_call("POST", "/v1/admin/tenants", {"name": name})
    # the E2B SDKs' client-side check (/^e2b_[0-9a-f]+$/ in packages/js-sdk/src/api/index.ts)
    assert re.fullmatch(r"e2b_[0-9a-f]{64}", t["token"]), t
    if quota:
        q = d.unix_call("PUT", f"/v1/admin/tenants/{t['id']}/quota", quota)
        assert all(q[k] == v for k, v in quota.items()), q
    return t


def usage(d, t):
    return d.unix_call("GET", f"/v1/admin/tenants/{t['id']}/usage")


def create(d, t, kind="sessions", expect=(201,), **body):
    body.setdefault("pool", "minimal")
    status, headers, payload = d.request("POST", f"/v1/{kind}", body=body, token=t["token"])
    assert status in expect, (status, payload)
    return status, dict(headers), json.loads(payload)


def session(d, t, sid):
    return d.call("GET", f"/v1/sessions/{sid}", token=t["token"])


def wait_state(d, t, sid, states, timeout=180):
    states = (states,) if isinstance(states, str) else states
    return d.wait(lambda: (s := session(d, t, sid))["state"] in states and s, timeout,
                  f"session {sid} to be {states}")


def metric(d, name):
    status, _, body = d.request("GET", "/metrics")
    assert status == 200, (status, body)
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"metric {name} missing")


BODY_MAX = 64 << 20  # [api] max_body_mib; four fill the default body budget (256 MiB)


class Trickle(threading.Thread):
    """A POST /v1/sessions that declares a largest body and sends a byte every 2 s: until the
    daemon closes it or answers (a refusal comes before any body byte is read)."""

    def __init__(self, d, t):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", d.port), timeout=120)
        self.sock.sendall((f"POST /v1/sessions HTTP/1.1\r\nHost: x\r\n"
                           f"Authorization: Bearer {t['token']}\r\n"
                           f"Content-Type: application/json\r\n"
                           f"Content-Length: {BODY_MAX}\r\n\r\n{{").encode())
        self.answer = b""  # what the daemon sent before it closed
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.sock.settimeout(2)
            try:
                got = self.sock.recv(4096)
                if not got:
                    return  # closed
                self.answer += got
            except socket.timeout:
                pass
            except OSError:
                return  # reset
            try:
                self.sock.sendall(b" ")
            except OSError:
                return

    def status(self):
        return int(self.answer.split()[1]) if self.answer.startswith(b"HTTP/1.1 ") else None


def hold_body_budget(d, a):
    """Tenant A trickles four largest bodies. Returns them once the daemon decided each (held,
    or refused 503 for A's share), read from its metrics: no guessing by time."""
    refused0 = metric(d, 'stockade_http_body_refused_total{bound="share"}')
    held0 = metric(d, "stockade_http_body_bytes")
    uploads = [Trickle(d, a) for _ in range(4)]
    for u in uploads:
        u.start()
    d.wait(lambda: metric(d, "stockade_http_body_bytes") - held0 +
           BODY_MAX * (metric(d, 'stockade_http_body_refused_total{bound="share"}') - refused0)
           == 4 * BODY_MAX, 30, "A's four bodies to be held or refused")
    return uploads, metric(d, "stockade_http_body_bytes") - held0


def pool_busy(d):
    return sum(p["busy"] for p in d.get("/v1/pool")["pools"])


def check_refusal(status, headers, body, quota, limit, used, retry):
    assert status == 429, (status, body)
    e = body["error"]
    assert e["code"] == "quota_exceeded" and e["quota"] == quota, e
    assert e["limit"] == limit and e["used"] == used, e
    assert e["retry_after"] == retry, e
    assert headers.get("Retry-After") == (None if retry is None else str(retry)), headers


# ------------------------------------------------------------------ scenarios

def scenario_concurrent():
    with Daemon(pools={"minimal": dict(warm=2, slots=3)}) as d:
        d.wait_ready()
        t = new_tenant(d, "burst", max_sessions=2, sessions_per_minute=1000)
        _, _, first = create(d, t)
        wait_state(d, t, first["id"], "running")
        d.wait(d.pool_full, 120, "the pool back at 2 idle")
        restores, busy = metric(d, "stockade_pool_restores_total"), pool_busy(d)
        assert busy == 1, busy

        gate, results = threading.Barrier(100), []
        lock = threading.Lock()

        def one(i):
            # The API allows 64 TCP connections per client address (api/README.md): spread
            # the 100 over 4 loopback source addresses so all of them can be open at once.
            conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=120,
                                              source_address=(f"127.0.0.{2 + i % 4}", 0))
            conn.connect()
            gate.wait()  # all 100 connected; the requests leave together
            conn.request("POST", "/v1/sessions", body=json.dumps({"pool": "minimal",
                                                                  "timeout_s": 120}),
                         headers={"Authorization": f"Bearer {t['token']}",
                                  "Content-Type": "application/json"})
            r = conn.getresponse()
            with lock:
                results.append((r.status, r.getheaders(), r.read()))
            conn.close()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(100)]
        t0 = time.time()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        took = time.time() - t0
        ok = [json.loads(p) for s, _, p in results if s == 201]
        refused = [(s, dict(h), json.loads(p)) for s, h, p in results if s == 429]
        assert len(ok) == 1 and len(refused) == 99, sorted(s for s, _, _ in results)
        for s, h, b in refused:
            check_refusal(s, h, b, "max_sessions", 2, 2, 5)
        wait_state(d, t, ok[0]["id"], "running")
        time.sleep(3)  # let the pool do whatever it would do
        assert pool_busy(d) == 2, d.get("/v1/pool")
        assert metric(d, "stockade_pool_restores_total") == restores, "the pool restored"
        u = usage(d, t)
        assert u["sessions"]["open"] == 2 and u["reservations"]["open"] == 2, u
        mine = d.call("GET", "/v1/sessions", token=t["token"])["sessions"]
        assert len(mine) == 2, mine
        print(f"concurrent ok: 100 creates in {took:.2f} s, 1 admitted, 99 x 429 max_sessions "
              f"(limit 2, used 2); busy {busy} -> 2, restores unchanged at {restores:.0f}")


TASK_ECHO = ["sh", "-c", "echo hello"]


def ledger_first_run(d, t):
    """Sessions of every kind; returns their ids. Leaves two live and one pending."""
    ids = []
    _, _, a = create(d, t, kind="tasks", argv=TASK_ECHO, timeout_s=60)  # completes
    ids.append(a["id"])
    wait_state(d, t, a["id"], "ended")
    _, _, b = create(d, t, timeout_s=60)  # closed by its owner
    ids.append(b["id"])
    wait_state(d, t, b["id"], "running")
    time.sleep(2)
    d.call("DELETE", f"/v1/sessions/{b['id']}", token=t["token"])
    wait_state(d, t, b["id"], "ended")
    _, _, c = create(d, t, timeout_s=300)  # live at the crash
    _, _, e = create(d, t, kind="tasks", argv=["sh", "-c", "sleep 1000"], timeout_s=300)
    ids += [c["id"], e["id"]]
    wait_state(d, t, c["id"], "running")
    wait_state(d, t, e["id"], "running")
    _, _, p = create(d, t, timeout_s=300)  # both slots busy: pending at the crash
    ids.append(p["id"])
    assert session(d, t, p["id"])["state"] == "pending"
    time.sleep(2)
    return ids


def scenario_ledger():
    d = Daemon(pools=MINIMAL, keep_state=True).start()
    try:
        d.wait_ready()
        t = new_tenant(d, "ledger", wallet_guest_seconds=100000, max_sessions=10)
        ids = ledger_first_run(d, t)
        before = usage(d, t)
        assert before["reservations"]["open"] == 3, before
    finally:
        d.kill9()  # mid-session: two guests live, one session pending
    d2 = Daemon(pools=MINIMAL, state_dir=d.state, prefix=d.prefix)
    with d2:
        # the live session's guest outlived the kill: adopted (issue 30), then its owner closes it
        wait_state(d2, t, ids[2], "running", timeout=300)
        d2.call("DELETE", f"/v1/sessions/{ids[2]}", token=t["token"])
        for sid in ids:
            wait_state(d2, t, sid, "ended", timeout=300)
        recs = {sid: session(d2, t, sid) for sid in ids}
        u = usage(d2, t)
    res, ses, count = ledger_rows(d.state)
    import shutil
    shutil.rmtree(d.state, ignore_errors=True)

    assert all(count.get(sid) == 1 for sid in ids), count  # one reservation per session
    total, api_total = 0, 0.0
    for sid in ids:
        r, s = res[sid], ses[sid]
        assert r["state"] in ("charged", "released") and r["ended_usec"] > 0, r
        ran = s["started_usec"] > 0
        # the guest's life: hand-out to the destroy request, never the extraction after it
        assert not ran or 0 < s["stopped_usec"] <= s["ended_usec"], s
        want = ledger_want_charge(r, s)
        assert r["state"] == ("charged" if ran else "released"), (r, s)
        assert r["charged_guest_s"] == want, (sid, r, s, want)
        total += want
        if ran:
            api_total += min(r["reserved_guest_s"], r["vcpus"] * (
                wall(recs[sid]["stopped_at"]) - wall(recs[sid]["started_at"])))
    assert recs[ids[2]]["end_reason"] == "closed" and recs[ids[4]]["end_reason"] == \
        "host_restart", recs
    assert res[ids[4]]["state"] == "released", "the pending session was charged"
    w = u["wallet_guest_seconds"]
    assert w["charged"] == total and w["reserved"] == 0, (w, total)
    assert w["available"] == 100000 - total, w
    assert u["reservations"] == {"open": 0, "charged": 4, "released": 1}, u
    # the API's own times (ms) agree to the second: per session at most 1 s rounded up
    assert 0 <= total - api_total < len(ids), (total, api_total)
    per = {sid[:12]: res[sid]["charged_guest_s"] for sid in ids}
    print(f"ledger ok: after kill -9 and restart every reservation ended once; wallet charged "
          f"{total} guest-s = sum of vcpus x ceil(stopped - started) (API times: "
          f"{api_total:.2f} s); per session {per}")


def scenario_wallet():
    with Daemon(pools=MINIMAL) as d:
        d.wait_ready()
        restores, created = (metric(d, "stockade_pool_restores_total"),
                             metric(d, "stockade_sessions_created_total"))
        broke = new_tenant(d, "broke", wallet_guest_seconds=0)
        for kind, extra in (("sessions", {}), ("tasks", {"argv": ["true"]})):
            s, h, b = create(d, broke, kind=kind, expect=(429,), timeout_s=30, **extra)
            check_refusal(s, h, b, "wallet_guest_seconds", 0, 0, None)
            assert b["error"]["requested"] == 30, b  # timeout x vcpus
        assert d.call("GET", "/v1/sessions", token=broke["token"])["sessions"] == []
        assert pool_busy(d) == 0 and d.pool_full()
        assert metric(d, "stockade_pool_restores_total") == restores, "a guest was touched"
        assert metric(d, "stockade_sessions_created_total") == created
        assert usage(d, broke)["reservations"] == {"open": 0, "charged": 0, "released": 0}

        # a wallet for exactly one session: the second waits for the first's refund
        d.unix_call("PUT", f"/v1/admin/tenants/{broke['id']}/quota",
                    {"wallet_guest_seconds": WALLET_ONE})
        _, _, one = create(d, broke, timeout_s=WALLET_ONE)
        check_refusal(*create(d, broke, expect=(429,), timeout_s=1), "wallet_guest_seconds",
                      WALLET_ONE, WALLET_ONE, 5)
        wait_state(d, broke, one["id"], "running")
        d.call("DELETE", f"/v1/sessions/{one['id']}", token=broke["token"])
        wait_state(d, broke, one["id"], "ended")
        w = usage(d, broke)["wallet_guest_seconds"]
        assert 0 < w["charged"] < WALLET_ONE and w["reserved"] == 0, w
        assert w["available"] == WALLET_ONE - w["charged"], w  # the rest was refunded

        # billed for the guest's life (hand-out to destroy request), not the extraction after
        billed = new_tenant(d, "billed")
        _, _, bt = create(d, billed, kind="tasks", argv=["sleep", "2"], timeout_s=60)
        bs = wait_state(d, billed, bt["id"], "ended")
        vcpus = {p["name"]: p["vcpus"] for p in d.get("/v1/pool")["pools"]}["minimal"]
        bw = usage(d, billed)["wallet_guest_seconds"]
        life = wall(bs["stopped_at"]) - wall(bs["started_at"])
        whole = wall(bs["ended_at"]) - wall(bs["started_at"])
        print(f"a 2 s task: guest life {life:.2f} s, started to ended {whole:.2f} s, "
              f"charged {bw['charged']} guest-s ({vcpus} vCPU)")
        assert bs["end_reason"] == "completed", bs
        assert wall(bs["started_at"]) <= wall(bs["stopped_at"]) <= wall(bs["ended_at"]), bs
        assert bw["charged"] <= 3 * vcpus, (bw, bs)
        assert bw["charged"] == vcpus * math.ceil(life - 0.001) or \
            bw["charged"] == vcpus * math.ceil(life), (bw, life)  # API times are in ms

        # per-session caps: refused whatever the wallet says
        caps = new_tenant(d, "caps", max_timeout_s=30, max_memory_mib=100, max_vcpus=0)
        check_refusal(*create(d, caps, expect=(429,), timeout_s=31), "max_vcpus", 0, 1, None)
        d.unix_call("PUT", f"/v1/admin/tenants/{caps['id']}/quota", {"max_vcpus": 1})
        check_refusal(*create(d, caps, expect=(429,), timeout_s=31), "max_memory_mib", 100, 256,
                      None)
        d.unix_call("PUT", f"/v1/admin/tenants/{caps['id']}/quota", {"max_memory_mib": 256})
        check_refusal(*create(d, caps, expect=(429,), timeout_s=31), "max_timeout_s", 30, 31,
                      None)
        s, h, b = create(d, caps, expect=(400,), timeout_s=1, pool="nope")
        assert b["error"]["code"] == "invalid_argument", b

        # the creation rate: one a minute
        slow = new_tenant(d, "slow", sessions_per_minute=1)
        _, _, r1 = create(d, slow, kind="tasks", argv=["true"], timeout_s=30)
        s, h, b = create(d, slow, expect=(429,), timeout_s=30)
        assert b["error"]["quota"] == "sessions_per_minute" and b["error"]["limit"] == 1, b
        assert 50 <= b["error"]["retry_after"] <= 60 and h["Retry-After"] == str(
            b["error"]["retry_after"]), (h, b)

        # the output cap: min(global 64 MiB, the tenant's 1000 bytes)
        loud = new_tenant(d, "loud", output_bytes=1000)
        _, _, task = create(d, loud, kind="tasks", timeout_s=60,
                            argv=["sh", "-c", "i=0; while [ $i -lt 100 ]; do "
                                  "echo 0123456789012345678901234567890123456789; "
                                  "i=$((i+1)); done; sleep 30"])
        s = wait_state(d, loud, task["id"], "ended")
        assert s["end_reason"] == "output_limit", s
        ev = [e for e in d.events(task["id"], token=loud["token"]) if e["type"] == "limit.output"]
        assert ev and ev[0]["limit_bytes"] == 1000, ev
        wait_state(d, slow, r1["id"], "ended")
        print(f"wallet ok: empty wallet 429 with no guest touched (restores {restores:.0f}, "
              f"busy 0); one-session wallet charged {w['charged']} and refunded "
              f"{WALLET_ONE - w['charged']}; caps, rate (retry_after {b['error']['retry_after']} s) "
              f"and output cap enforced")


def scenario_isolation():
    with Daemon(pools=MINIMAL) as d:
        d.wait_ready()
        a, b = new_tenant(d, "tenant-a"), new_tenant(d, "tenant-b")
        _, _, tk = create(d, b, kind="tasks", timeout_s=60,
                          argv=["sh", "-c", "echo secret > s.txt"])
        wait_state(d, b, tk["id"], "ended")
        # A trickles four largest bodies: declared, they are the whole default body budget
        cut0 = metric(d, "stockade_http_slow_bodies_cut_total")
        uploads, held = hold_body_budget(d, a)
        _, _, ses = create(d, b, timeout_s=300)  # B's create, answered while A holds its share
        assert metric(d, "stockade_http_body_bytes") >= 2 * BODY_MAX  # A held them throughout
        refused = [u.status() for u in uploads if u.status() is not None]
        assert held == 2 * BODY_MAX and refused == [503, 503], (held, refused)
        sid, tid = ses["id"], tk["id"]
        wait_state(d, b, sid, "running")
        # A's two held uploads (a byte per 2 s) are cut for the minimum body rate, which frees
        # A's share for the routes below
        t0 = time.time()
        d.wait(lambda: metric(d, "stockade_http_slow_bodies_cut_total") - cut0 == 2, 60,
               "A's trickled bodies to be cut for the minimum rate")
        cut_s = time.time() - t0
        for u in uploads:
            u.join(10)
            u.stop.set()
            u.sock.close()
        assert all(u.status() in (None, 503) for u in uploads)
        ex = d.call("POST", f"/v1/sessions/{sid}/exec", body={"argv": ["sleep", "100"],
                                                               "stdin": True}, token=b["token"])
        routes = []
        for kind, x in (("sessions", sid), ("sessions", tid), ("tasks", tid), ("tasks", sid)):
            base = f"/v1/{kind}/{x}"
            routes += [("GET", base, None, None), ("POST", base + "/cancel", {}, None),
                       ("GET", base + "/events", None, None),
                       ("GET", base + "/files/s.txt", None, None),
                       ("GET", base + "/workspace", None, None)]
            if kind == "sessions":
                routes += [("DELETE", base, None, None),
                           ("POST", base + "/exec", {"argv": ["true"]}, None),
                           ("POST", base + f"/execs/{ex['exec_id']}/signal", {"signal": "TERM"},
                            None),
                           ("POST", base + f"/execs/{ex['exec_id']}/stdin", None, b"x"),
                           ("PUT", base + "/files/planted.txt", None, b"x")]
        for method, path, body, raw in routes:
            status, _, payload = d.request(method, path, body=body, raw=raw, token=a["token"])
            assert status == 404, (method, path, status, payload)
            assert json.loads(payload)["error"]["code"] == "not_found", payload
            assert b"secret" not in payload
        listed = [s["id"] for s in d.call("GET", "/v1/sessions", token=a["token"])["sessions"]]
        assert sid not in listed and tid not in listed, listed
        # nothing A did reached B's session: it still runs, its exec is alive, nothing planted
        assert session(d, b, sid)["state"] == "running"
        status, _, _ = d.request("GET", f"/v1/sessions/{sid}/files/planted.txt",
                                 token=b["token"])
        assert status == 404, status  # a missing file of a running session (promises_api.py)
        # B sees its own; tenants may not use the admin API nor act for another tenant
        status, _, body = d.request("GET", f"/v1/tasks/{tid}/files/s.txt", token=b["token"])
        assert status == 200 and body == b"secret\n", (status, body)
        status, _, _ = d.request("GET", "/v1/admin/tenants", token=b["token"])
        assert status == 403, status
        status, _, _ = d.request("GET", "/v1/sessions", token=b["token"],
                                 headers={"X-Stockade-Tenant": a["id"]})
        assert status == 403, status
        # an operator acting for B sees exactly B's sessions
        mine = d.call("GET", "/v1/sessions", unix=True, headers={"X-Stockade-Tenant": b["id"]})
        assert {s["id"] for s in mine["sessions"]} == {sid, tid}, mine
        print(f"isolation ok: tenant A got 404 on {len(routes)} session/task routes of tenant "
              f"B; B's session untouched; A's four trickled {BODY_MAX >> 20} MiB uploads held "
              f"{int(held) >> 20} MiB (2 refused 503) and B's create was answered; the held two were "
              f"cut for the minimum body rate ({cut_s:.1f} s after B's session ran)")


def scenario_revoked():
    with Daemon(pools={"minimal": dict(warm=0, slots=1)}) as d:
        t = new_tenant(d, "revoke-me")
        second = d.unix_call("POST", f"/v1/admin/tenants/{t['id']}/tokens")
        assert second["token"] != t["token"] and not second["admin"], second
        legacy = "stk_" + t["token"][4:]  # the spelling tokens had before: the same token
        for tok in (t["token"], second["token"], legacy):
            assert d.call("GET", "/v1/sessions", token=tok) == {"sessions": [], "next": None}
        r = d.unix_call("DELETE", f"/v1/admin/tokens/{t['token_id']}")
        assert r["revoked_at"], r

        def unauthorized(path, method="GET", body=None, **kw):
            status, headers, payload = d.request(method, path, body=body, **kw)
            assert status == 401, (path, kw, status, payload)
            assert json.loads(payload)["error"]["code"] == "unauthorized", payload
            assert t["token"].encode() not in payload

        for path in ("/v1/sessions", "/v1/pool", "/metrics", "/v1/admin/tenants", "/v1/nope"):
            unauthorized(path, token=t["token"])  # revoked
            unauthorized(path, token=legacy)  # revoked in either spelling
            unauthorized(path, token=None)  # missing
        unauthorized("/v1/sessions", "POST", {"pool": "minimal"}, token=t["token"])
        unauthorized("/v1/sessions", token="stk_" + "0" * 64)  # well-formed, unknown
        unauthorized("/v1/sessions", token="stk_short")
        unauthorized("/v1/sessions", token=None, headers={"Authorization": "Basic dTpw"})
        unauthorized("/v1/sessions", token=None, headers={"Authorization": t["token"]})
        assert d.call("GET", "/v1/sessions", token=second["token"])["sessions"] == []
        assert d.get("/v1/health")["status"] == "ok"  # no token needed
        status, _, _ = d.request("GET", "/metrics", token=second["token"])
        assert status == 403, status  # operators only
        toks = d.unix_call("GET", f"/v1/admin/tenants/{t['id']}/tokens")["tokens"]
        by_id = {x["id"]: x for x in toks}
        assert by_id[t["token_id"]]["revoked_at"] and by_id[second["id"]]["revoked_at"] is None
        assert all("token" not in x and "hash" not in x for x in toks), toks

        # an operator token made by the daemon's flag (the daemon keeps running)
        exe = os.path.join(d.build, "hostd", "stockaded")
        out = subprocess.run([exe, "-c", os.path.join(d.state, "stockaded.conf"),
                              "--create-admin-token"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out
        op, op_id = out.stdout.strip(), out.stderr.split()[2]  # "operator token tok_... created"
        assert op_id.startswith("tok_"), out.stderr
        assert d.call("GET", "/v1/admin/tenants", token=op)["tenants"]
        d.unix_call("DELETE", f"/v1/admin/tokens/{op_id}")
        unauthorized("/v1/admin/tenants", token=op)
        print(f"revoked ok: revoked, missing and malformed tokens are 401 on every route; "
              f"the tenant's other token kept working; operator token from the flag revoked")
        removed_tenant(d, t, second)


def removed_tenant(d, t, second):
    """DELETE /v1/admin/tenants/{id} (issue 30) on one host, no guest needed (warm=0: a
    session stays pending, which is not ended)."""
    tid = t["id"]
    sid = d.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": 60},
                 token=second["token"], expect=(201,))["id"]
    status, _, payload = d.request("DELETE", f"/v1/admin/tenants/{tid}")
    err = json.loads(payload)["error"]
    assert status == 409 and err["code"] == "conflict" and err["open_sessions"] == 1, payload
    assert d.call("GET", "/v1/sessions", token=second["token"])["sessions"], "nothing changed"
    for path, want in ((f"/v1/admin/tenants/{tid}?cancel=maybe", 400),
                       ("/v1/admin/tenants/default?cancel=1", 409),
                       ("/v1/admin/tenants/ten_" + "a" * 26, 404),
                       ("/v1/admin/tenants/not..an..id", 404)):
        status, _, payload = d.request("DELETE", path)
        assert status == want, (path, status, payload)
    gone = d.unix_call("DELETE", f"/v1/admin/tenants/{tid}?cancel=1")
    assert gone["tokens_revoked"] == 1 and gone["sessions_cancelled"] == 1 and \
        gone["removed_at"] and gone["name"] == "revoke-me", gone  # the first token was revoked
    s = d.unix_call("GET", f"/v1/sessions/{sid}")
    assert s["state"] == "ended" and s["end_reason"] == "tenant_removed", s
    res, _, count = ledger_rows(d.state)
    assert count.get(sid) == 1 and res[sid]["state"] == "released", (res.get(sid), count)
    status, _, _ = d.request("GET", "/v1/sessions", token=second["token"])
    assert status == 401, status
    again = d.unix_call("DELETE", f"/v1/admin/tenants/{tid}")
    assert again["removed_at"] == gone["removed_at"] and again["tokens_revoked"] == 0, again
    acting = {"X-Stockade-Tenant": tid}
    status, _, payload = d.request("POST", "/v1/sessions", body={"pool": "minimal"},
                                   headers=acting, unix=True)
    assert status == 403 and b"was removed" in payload, (status, payload)
    for method, path, body in (("POST", f"/v1/admin/tenants/{tid}/tokens", None),
                               ("PUT", f"/v1/admin/tenants/{tid}/quota", {"max_sessions": 9})):
        status, _, payload = d.request(method, path, body=body, unix=True)
        assert status == 409 and b"was removed" in payload, (path, status, payload)
    use = d.unix_call("GET", f"/v1/admin/tenants/{tid}/usage")
    assert use["removed_at"] == gone["removed_at"] and use["reservations"]["released"] == 1, use
    names = [x["id"] for x in d.unix_call("GET", "/v1/admin/tenants")["tenants"]]
    every = d.unix_call("GET", "/v1/admin/tenants?removed=1")["tenants"]
    assert tid not in names and any(x["id"] == tid and x["removed_at"] for x in every), every
    status, _, _ = d.request("GET", "/v1/admin/tenants?removed=perhaps", unix=True)
    assert status == 400, status
    new = d.unix_call("POST", "/v1/admin/tenants", {"name": "revoke-me"})
    assert new["id"] != tid
    print("removed ok: refused with a pending session (counted), removed with it (ended "
          "tenant_removed, released once), tokens 401, idempotent; nothing admitted, issued or "
          "set after, not even acting for it; usage kept; the name free")


if __name__ == "__main__":
    scenarios = {n[len("scenario_"):]: f for n, f in globals().items()
                 if n.startswith("scenario_")}
    if len(sys.argv) != 2 or sys.argv[1] not in scenarios:
        print(f"usage: {sys.argv[0]} {'|'.join(scenarios)}", file=sys.stderr)
        sys.exit(2)
    scenarios[sys.argv[1]]()
    print("ok")
