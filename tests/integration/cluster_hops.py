"""Issue 25's cluster checks (findings 6, 7, 8, 10), run inside test_cluster.py's scenarios on
their three real hosts (no daemons of their own: CI time). Standard library only.

route (only host a runs a guest; the session sid of tenant "default" runs there):
  hop_share   one tenant's followed event streams through b to its own session on a take at
              most its share of b's hops (HOP_SHARE; one more is 429) and cut nobody else: the
              default tenant's GET of sid through b and through c and an exec through b answer,
              and a client of a's own listener from b's address is served. Before the
              host-to-host listener, 64 such streams made all of those 502 host_unreachable
              (b's hops shared a's per-address limit of 64) and reset the client.
  lookup_cost a tenant's question about a session id costs one index lookup whether the id
              exists (and another tenant's answer is cached) or not, then a cache hit either way,
              through a host that does not own it and through the owner (stockade_forward_
              lookups_total, by causality; the cached timings are printed, never judged).
  hop_marks   the host-to-host listener: no credential 401, the host secret itself as the
              credential 401 (a hop carries the hop key derived from it: test_cluster_tls.py),
              a hop for another host 421, a hop that reaches a host not owning the session is
              answered there (404), never passed on; a client's listener refuses the real
              credential (401). Over HTTPS when the hosts serve it (scenario route).
race (every host runs the E2B faces; the sandbox sbx lives on b):
  envd_flood  tokenless envd requests naming made-up sandboxes, many at once through b: no index
              lookup at all (by causality), and an exec of sbx on b keeps its latency within 2x
              the one measured just before in the same run (the finding's bound).
  e2b_marks   a hop for the envd face reaching c (not the owner) is answered by c (502, not
              running), not passed on to b; b's URL in the hosts table pointed at c (two hosts
              behind one address, as a load balancer): a request through a makes one hop, which c
              refuses 421, instead of a loop."""
import http.client
import json
import secrets
import socket
import ssl
import statistics
import threading
import time

from test_cluster_tls import hop_key

HOP_SHARE = 64  # hostd/api/api_forward_internal.h, FWD_TENANT_HOPS_MAX
B32 = "abcdefghijklmnopqrstuvwxyz234567"
# Tokenless envd clients at once, and the pace they keep together: enough to keep the loop
# busy where each such request cost it an index lookup (main: exec latency x5.3), while the
# flood's own CPU (a connection, a thread and a 401 each, and this Python client) stays small
# beside the guest's on a shared machine.
FLOODERS = 16
FLOOD_PER_S = 150
EXEC_RUNS = 8


def metric(d, name):
    """A figure of d's /metrics (the first line whose name, labels included, is name)."""
    text = d.request("GET", "/metrics")[2].decode()
    return int(next(x.rsplit(" ", 1)[1] for x in text.splitlines() if x.startswith(name + " ")))


def host_secret(d):
    """The current secret of d's host_token_file (its first line)."""
    with open(d.host_token_file) as f:
        return f.read().split("\n", 1)[0].strip()


def hop_credential(d):
    """What d sends as X-Stockade-Host-Auth: its current secret's hop key, never the secret."""
    return hop_key(host_secret(d))


def hop_request(d, method, path, to, face="api", credential=None, headers=None, body=None,
                ret_headers=None):
    """One request to d's host-to-host listener (HTTPS when d serves it, with the API's
    certificate), marked as a hop to host `to` for `face`; (status, parsed body or raw
    bytes). ret_headers (a dict) gets the answer's headers."""
    hdrs = {"X-Stockade-Hop-To": to, "X-Stockade-Hop-Face": face, **(headers or {})}
    if credential:
        hdrs["X-Stockade-Host-Auth"] = credential
    conn = d.connection(60, port=d.hop_port)
    conn.request(method, path, body=body, headers=hdrs)
    r = conn.getresponse()
    raw = r.read()
    if ret_headers is not None:
        ret_headers.update((k.lower(), v) for k, v in r.getheaders())
    conn.close()
    try:
        return r.status, json.loads(raw) if raw else None
    except ValueError:
        return r.status, raw


def random_id(prefix=""):
    return prefix + "".join(secrets.choice(B32) for _ in range(26))


# ------------------------------------------------------------------ route

def open_follow(d, sid, token, src):
    """A raw events?follow=1 request from address src; the socket (its answer unread)."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=60, source_address=(src, 0))
    if d.tls:
        s = ssl.create_default_context(cafile=d.tls["ca"]).wrap_socket(
            s, server_hostname="127.0.0.1")
    q = f"/v1/sessions/{sid}/events?follow=1"
    s.sendall(f"GET {q} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    return s


def status_line(s):
    buf = b""
    while b"\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf.split(b"\r\n", 1)[0].decode(errors="replace")


def hop_share(a, b, c, sid, until_status):
    """Finding 6. Returns a line of figures."""
    hog = a.unix_call("POST", "/v1/admin/tenants", {"name": "hop-hog"})["token"]
    until_status(b, hog, 200, "the hog's token on host b")
    # a's one guest runs sid: the hog's session waits on a for the next one (no other host
    # has the pool warm), which keeps its event stream open
    hsid = a.call("POST", "/v1/sessions", {"pool": "minimal", "timeout_s": 1200},
                  token=hog)["id"]
    live0 = metric(b, "stockade_forward_live")
    socks = []
    try:
        # b takes 64 connections per client address: spread over two
        socks = [open_follow(b, hsid, hog, f"127.0.3.{1 + i // 32}") for i in range(HOP_SHARE)]
        lines = [status_line(s) for s in socks]
        assert all(" 200 " in x for x in lines), {x: lines.count(x) for x in set(lines)}
        assert metric(b, "stockade_forward_live") >= HOP_SHARE
        took = {}
        for name, d in (("b", b), ("c", c)):
            t0 = time.perf_counter()
            status, _, body = d.request("GET", f"/v1/sessions/{sid}")  # another tenant's
            took[name] = (time.perf_counter() - t0) * 1000
            assert status == 200 and json.loads(body)["id"] == sid, (name, status, body)
        ex = b.post(f"/v1/sessions/{sid}/exec", {"argv": ["true"]})["exec_id"]
        assert a.get("/v1/health")["status"] == "ok"  # a client of a's own listener
        socks.append(open_follow(b, hsid, hog, "127.0.3.3"))
        extra = status_line(socks[-1])
        assert " 429 " in extra, extra  # the hog's share is full
    finally:
        for s in socks:
            s.close()
    b.wait(lambda: metric(b, "stockade_forward_live") <= live0, 30,
           "b's transfers for the hog's streams to end")
    a.call("POST", f"/v1/sessions/{hsid}/cancel", token=hog)
    return (f"hop share: {HOP_SHARE} followed streams of one tenant through b held, the next "
            f"429; meanwhile another tenant's GET through b {took['b']:.1f} ms, through c "
            f"{took['c']:.1f} ms, exec {ex} through b accepted")


def lookup_cost(a, b, sid, until_status):
    """Finding 8. Returns a line of figures."""
    probe = a.unix_call("POST", "/v1/admin/tenants", {"name": "lookup-probe"})["token"]
    until_status(b, probe, 200, "the probe's token on host b")
    b.session(sid)  # the owner tenant's own lookup through b: its answer is cached at b
    cached = {}
    for h, d in (("b", b), ("a", a)):  # a: the owner, whose store holds sid (not the probe's)
        ids = {"known": sid, "missing": random_id("ses_")}
        for name, p in ids.items():
            n0 = metric(d, "stockade_forward_lookups_total")
            status = d.request("GET", f"/v1/sessions/{p}", token=probe)[0]
            n1 = metric(d, "stockade_forward_lookups_total")
            assert status == 404 and n1 == n0 + 1, (h, name, status, n0, n1)
        conn = d.connection(60)
        for _ in range(20):  # interleaved: the machine's other load falls on both
            for name, p in ids.items():
                t0 = time.perf_counter()
                conn.request("GET", f"/v1/sessions/{p}",
                             headers={"Authorization": f"Bearer {probe}"})
                r = conn.getresponse()
                r.read()
                cached.setdefault((h, name), []).append((time.perf_counter() - t0) * 1000)
                assert r.status == 404, r.status
        conn.close()
        assert metric(d, "stockade_forward_lookups_total") == n1, h
    cached = {k: statistics.median(v) for k, v in cached.items()}
    return ("lookup cost: another tenant's first question costs one index lookup for a known "
            "and for a missing id, then none, through b and through the owner a; cached p50 "
            + ", ".join(f"{h}/{k} {v:.2f} ms" for (h, k), v in cached.items()))


def hop_marks(a, b, sid):
    """Finding 10 (native face) and the listener's refusals."""
    cred = hop_credential(a)
    ident = {"X-Stockade-Forwarded-Tenant": "default", "X-Stockade-Forwarded-Admin": "0"}
    path = f"/v1/sessions/{sid}"
    status, body = hop_request(a, "GET", path, "host-a", credential=cred, headers=ident)
    assert status == 200 and body["id"] == sid, (status, body)  # the owner takes a real hop
    status, _ = hop_request(a, "GET", path, "host-a", headers=ident)
    assert status == 401, status  # no credential
    for wrong in ("x" * 64, host_secret(a)):  # the secret itself is no hop credential
        seen = {}
        status, _ = hop_request(a, "GET", path, "host-a", credential=wrong, headers=ident,
                                ret_headers=seen)
        assert status == 401 and seen.get("x-stockade-hop-refused") == "credential", \
            (status, seen)
    status, body = hop_request(b, "GET", path, "host-a", credential=cred, headers=ident)
    assert status == 421 and body["error"]["code"] == "misdirected_hop", (status, body)
    n0 = metric(b, "stockade_forward_total")
    status, _ = hop_request(b, "GET", path, "host-b", credential=cred, headers=ident)
    assert status == 404, status  # not b's, and a hop is never passed on
    assert metric(b, "stockade_forward_total") == n0
    status, _ = hop_request(a, "GET", "/v1/admin/tenants", "host-a", credential=cred,
                            headers=ident)
    assert status == 401, status  # the credential opens session routes only
    status, _ = hop_request(a, "GET", path, "host-a", face="nope", credential=cred,
                            headers=ident)
    assert status == 400, status
    # a client's listener refuses the headers, the real credential included
    status, _, body = a.request("GET", path, headers={"X-Stockade-Host-Auth": cred, **ident},
                                token=None)
    assert status == 401, (status, body)


# ------------------------------------------------------------------ race (E2B)

def flood(port, on, stop, statuses):
    """Tokenless List calls naming made-up sandboxes, FLOOD_PER_S / FLOODERS a second while
    `on` is set."""
    step = FLOODERS / FLOOD_PER_S
    due = time.monotonic()
    while not stop.is_set():
        if not on.wait(0.05):
            due = time.monotonic()
            continue
        due += step
        time.sleep(max(0.0, due - time.monotonic()))
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("POST", "/process.Process/List", body=b"{}",
                      headers={"E2b-Sandbox-Id": random_id(), "Content-Type": "application/json",
                               "Connect-Protocol-Version": "1"})
            r = c.getresponse()
            r.read()
            c.close()
            statuses.append(r.status)
        except OSError:
            statuses.append(0)


def envd_flood(b, envd_port, sbx, envd_run):
    """Finding 7. Execs with the flood on and off alternate (the machine's other load drifts
    over both alike); returns a line of figures."""
    def one():
        got = envd_run(envd_port, sbx, "echo x")
        assert got[:2] == ("x\n", 0), got
        return got[2]

    one()  # warm
    n0 = metric(b, "stockade_forward_lookups_total")
    on, stop, statuses = threading.Event(), threading.Event(), []
    threads = [threading.Thread(target=flood, args=(envd_port, on, stop, statuses))
               for _ in range(FLOODERS)]
    for t in threads:
        t.start()
    took = {False: [], True: []}
    try:
        for i in range(2 * EXEC_RUNS):
            loaded = i % 2 == 1
            (on.set if loaded else on.clear)()
            time.sleep(0.3)  # the flood at its pace (or gone) before the exec starts
            took[loaded].append(one())
    finally:
        stop.set()
        on.set()
        for t in threads:
            t.join()
    n1 = metric(b, "stockade_forward_lookups_total")
    base, loaded = statistics.median(took[False]), statistics.median(took[True])
    kinds = {s: statuses.count(s) for s in set(statuses)}
    assert n1 == n0, f"tokenless envd requests made {n1 - n0} index lookups"
    assert set(kinds) == {401}, kinds
    assert loaded <= 2 * base, f"exec p50 {loaded * 1000:.0f} ms under the flood, " \
                               f"{base * 1000:.0f} ms without"
    return (f"envd flood: {len(statuses)} tokenless requests for made-up sandboxes through b "
            f"({FLOODERS} at once, {FLOOD_PER_S}/s) all 401, 0 index lookups; exec p50 "
            f"{base * 1000:.0f} ms without, {loaded * 1000:.0f} ms during ({loaded / base:.2f}x, "
            f"bound 2x)")


def e2b_marks(pg, a, b, c, e2b, sbx):
    """Finding 10 (E2B faces). Returns a line of figures."""
    cred = hop_credential(b)
    hdrs = {"E2b-Sandbox-Id": sbx["sandboxID"], "X-Access-Token": sbx["envdAccessToken"],
            "Content-Type": "application/json", "Connect-Protocol-Version": "1"}
    n0 = {h: metric(d, "stockade_forward_total") for h, d in (("a", a), ("b", b), ("c", c))}
    status, body = hop_request(c, "POST", "/process.Process/List", "host-c", face="e2b-envd",
                               credential=cred, headers=hdrs, body=b"{}")
    assert status == 502, (status, body)  # b's sandbox, not c's: answered, never passed on
    status, body = hop_request(c, "POST", "/process.Process/List", "host-b", face="e2b-envd",
                               credential=cred, headers=hdrs, body=b"{}")
    assert status == 421, (status, body)
    status, body = hop_request(b, "POST", "/process.Process/List", "host-b", face="e2b-envd",
                               credential=cred, headers=hdrs, body=b"{}")
    assert status == 200 and "processes" in body, (status, body)  # the owner's real hop
    assert {h: metric(d, "stockade_forward_total") for h, d in
            (("a", a), ("b", b), ("c", c))} == n0
    # two hosts reached through one address: b's row names c's listener. a has not looked this
    # sandbox up yet, so it reads the row now: one hop to c, which refuses it (not for it).
    (url,), = pg.psql("SELECT url FROM hosts WHERE id = 'host-b'")
    pg.psql(f"UPDATE hosts SET url = '{c.scheme}://127.0.0.1:{c.hop_port}' WHERE id = 'host-b'")
    try:
        t0 = time.time()
        conn = http.client.HTTPConnection("127.0.0.1", e2b["a"][1], timeout=60)
        conn.request("POST", "/process.Process/List", body=b"{}", headers=hdrs)
        r = conn.getresponse()
        body = r.read()
        conn.close()
        took = time.time() - t0
    finally:
        pg.psql(f"UPDATE hosts SET url = '{url}' WHERE id = 'host-b'")
    assert r.status == 421 and b"misdirected_hop" in body, (r.status, body)
    after = {h: metric(d, "stockade_forward_total") for h, d in (("a", a), ("b", b), ("c", c))}
    assert after == dict(n0, a=n0["a"] + 1), (n0, after)
    return (f"hop marks: a hop reaching a host that does not own the sandbox answered there, "
            f"one for another host 421; b's URL pointed at c: one hop, refused 421 in "
            f"{took * 1000:.0f} ms (main: {256} hops in a loop, 502 after 4.9 s)")
