"""TLS on every hop and the host credential's hygiene (issue 25 finding 9, issue 30), checked
on the daemons of test_cluster.py's scenarios (no daemon of its own: CI time):

route_tls (scenario route, whose three hosts serve HTTPS with certificates of a test CA
made by openssl at start, advertise https:// URLs and verify each other with [cluster]
tls_ca): the native API answers curl given the CA; the CLI talks HTTPS with --cacert and
says what to do without it; every host's E2B API answers over HTTPS and publishes https://
URLs; an envd request through c for a's sandbox id carries a token derived (here, in
Python, from the shared secret) with the envd key and is passed to a over TLS (c's
stockade_forward_total counts it, a answers it), a token made with the raw secret is refused
by c. A session whose host (a row added to the database) advertises http:// is refused 502
naming it, and nothing connects there; one whose host presents a certificate of another CA
is refused 502 naming it, and that host never reads a byte of the request. The hop header
carries the derived hop key: on a's host-to-host listener (HTTPS with the API's certificate;
the hop's port, which advertise_url names) the raw secret sent as X-Stockade-Host-Auth is
401, the hop key opens the session; a client's listener takes neither. Rotation: a's
host_token_file gets "S1\\nS2" and SIGHUP; c's "S2": c's hops (S2) and b's (S1) both reach
a; a's "S2" only: b's hops are refused and b answers 502 naming host-a ("refused this host's
credential"), for the native face and for an E2B envd pass hop alike (never the owner's 401,
which would blame the caller), c's still reach a; c refuses an envd token of S1 and passes
one of S2; a file that cannot be read keeps the keys in use; b's "S2": b's hops reach a
again.

race_insecure (scenario race, whose hosts keep http:// with insecure_hops = true and run
with http_proxy, https_proxy and ALL_PROXY pointing at a listener): a hop to a host (a row
added to the database) that records what reaches it carries the hop key, not the secret,
and the proxy listener never sees a connection.

Standard library only."""
import hashlib
import hmac
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import threading
import time

ENVD_CONTEXT = b"stockade-e2b-envd-v1:"


def hkdf(secret, label, n=32):
    """HKDF-SHA-256 (RFC 5869) with no salt, as hostd/cluster/cluster_keys.c derives."""
    prk = hmac.new(b"\0" * 32, secret, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + label + bytes([i]), hashlib.sha256).digest()
        out, i = out + t, i + 1
    return out[:n]


def hop_key(secret):
    return hkdf(secret.encode(), b"stockade hop auth v1").hex()


def envd_token(secret, sandbox_id):
    key = hkdf(secret.encode(), b"stockade e2b envd v1")
    return hmac.new(key, ENVD_CONTEXT + sandbox_id.encode(), hashlib.sha256).hexdigest()


def new_session_id():
    return "ses_" + "".join(random.choice("abcdefghijklmnopqrstuvwxyz234567") for _ in range(26))


def fake_owner(pg, host_id, url):
    """A host row with url (its heartbeat in the future: never taken over, never a place
    for a create) and a live session of tenant default on it; returns the session's id."""
    sid = new_session_id()
    pg.psql(f"INSERT INTO hosts (id, url, started_usec, heartbeat_usec) VALUES "
            f"('{host_id}', '{url}', 0, 4000000000000000)")
    pg.psql(f"INSERT INTO sessions (id, tenant_id, host_id, state, created_usec) VALUES "
            f"('{sid}', 'default', '{host_id}', 'live', 0)")
    return sid


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection: plain (the request head it
    read, answered 200 with a small JSON body), or TLS with the given certificate (whether
    the handshake passed, and any bytes read after it)."""

    def __init__(self, tls=None):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.tls = None
        if tls:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(tls["cert"], tls["key"])
        self.seen = []  # per connection: dict(handshake=..., data=bytes)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            rec = {"handshake": None, "data": b"", "done": False}
            self.seen.append(rec)
            threading.Thread(target=self.one, args=(conn, rec), daemon=True).start()

    def one(self, conn, rec):
        conn.settimeout(10)
        try:
            if self.tls:
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                    rec["handshake"] = "ok"
                except (ssl.SSLError, OSError) as e:
                    rec["handshake"] = f"failed: {e}"
                    return
            while b"\r\n\r\n" not in rec["data"]:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                rec["data"] += chunk
            body = b'{"id":"recorded"}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        except OSError:
            pass
        finally:
            conn.close()
            rec["done"] = True

    def close(self):
        self.sock.close()


def error_of(body):
    return json.loads(body).get("error", {})


def sighup_until(d, text, timeout=30):
    """SIGHUP to d and the wait for its log to say text (once more than before)."""
    before = d.tail_log(100000).count(text)
    d.proc.send_signal(signal.SIGHUP)
    d.wait(lambda: d.tail_log(100000).count(text) > before, timeout, f"'{text}' in the log")


def write_secrets(d, *secrets):
    with open(d.host_token_file, "w") as f:
        f.write("\n".join(secrets) + "\n")


# ------------------------------------------------------------------ route (HTTPS)

def tls_serving(a, b, sid):
    """curl with the CA; the CLI with --cacert, and its advice without."""
    url = f"https://127.0.0.1:{b.port}/v1/sessions/{sid}"
    r = subprocess.run(["curl", "-sS", "--cacert", b.tls["ca"], "-H",
                        f"Authorization: Bearer {b.token}", url],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["id"] == sid, (r.returncode, r.stderr)
    r = subprocess.run(["curl", "-sS", url], capture_output=True, text=True, timeout=60)
    assert r.returncode == 60, (r.returncode, r.stderr)  # the system's store: refused
    exe = os.path.join(b.build, "tools", "stockade")
    env = dict(os.environ, STOCKADE_URL=f"https://127.0.0.1:{b.port}", STOCKADE_TOKEN=b.token)
    env.pop("STOCKADE_CACERT", None)
    r = subprocess.run([exe, "--json", "sessions", "ls"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 125 and "--cacert" in r.stderr, (r.returncode, r.stderr)
    r = subprocess.run([exe, "--cacert", b.tls["ca"], "--json", "sessions", "ls"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, (r.returncode, r.stderr)


def forward_metric(d, name):
    _, _, body = d.request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def envd_health(d, port, sandbox_id, token, ret_body=None):
    """GET /health on d's envd listener for sandbox_id (HTTPS): the status (ret_body, a
    list, gets the body)."""
    conn = d.connection(60, port=port)
    conn.request("GET", "/health", headers={"E2b-Sandbox-Id": sandbox_id,
                                            "X-Access-Token": token})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    if ret_body is not None:
        ret_body.append(body)
    return r.status


def tls_e2b(pg, hosts, e2b, sid, secret):
    """E2B's listeners over HTTPS, their published https:// URLs, and the pass hop: an envd
    request through c for a's sandbox id, with the derived token, reaches a over TLS."""
    a, c = hosts["a"], hosts["c"]
    urls = dict((h, (api, envd)) for h, api, envd in pg.psql(
        "SELECT id, e2b_api_url, e2b_envd_url FROM hosts WHERE id LIKE 'host-_'"))
    for h, (api, envd) in e2b.items():
        assert urls[f"host-{h}"] == (f"https://127.0.0.1:{api}", f"https://127.0.0.1:{envd}"), urls
        conn = hosts[h].connection(60, port=api)
        conn.request("GET", "/health")
        assert conn.getresponse().status == 200
        conn.close()
    sbx = sid[len("ses_"):]
    before = forward_metric(c, "stockade_forward_total")
    # a's own answer for an id its table does not hold (never twice): 502 "not running"
    assert envd_health(c, e2b["c"][1], sbx, envd_token(secret, sbx)) == 502
    assert forward_metric(c, "stockade_forward_total") == before + 1
    # the secret itself as the HMAC key (what the old derivation used) opens nothing
    raw = hmac.new(secret.encode(), ENVD_CONTEXT + sbx.encode(), hashlib.sha256).hexdigest()
    assert envd_health(c, e2b["c"][1], sbx, raw) == 401
    assert forward_metric(c, "stockade_forward_total") == before + 1
    return before + 1


def tls_refusals(pg, b, other_ca_tls):
    """An http:// owner and an owner with another CA's certificate: 502 naming them, and
    neither reads a byte of the request."""
    plain, rogue = Listener(), Listener(tls=other_ca_tls)
    try:
        sid_d = fake_owner(pg, "host-d", f"http://127.0.0.1:{plain.port}")
        sid_e = fake_owner(pg, "host-e", f"https://127.0.0.1:{rogue.port}")
        status, _, body = b.request("GET", f"/v1/sessions/{sid_d}")
        err = error_of(body)
        assert status == 502 and err.get("host") == "host-d" and \
            "insecure_hops" in err.get("message", ""), (status, body)
        assert plain.seen == [], plain.seen
        status, _, body = b.request("GET", f"/v1/sessions/{sid_e}")
        err = error_of(body)
        assert status == 502 and err.get("host") == "host-e" and \
            "certificate" in err.get("message", ""), (status, body)
        # curl checks the certificate once the handshake is done (so the rogue's side of it
        # may complete) and then closes: not a byte of the request, credential included
        b.wait(lambda: rogue.seen and all(r["done"] for r in rogue.seen), 10,
               "the rogue's connection to end")
        assert all(r["data"] == b"" for r in rogue.seen), rogue.seen
        return err["message"]
    finally:
        plain.close()
        rogue.close()


def hop_get(d, to, path, headers):
    """GET path on d's host-to-host listener (HTTPS, verified against the test CA), marked
    as a hop to host `to` for its native face: (status, body)."""
    conn = d.connection(60, port=d.hop_port)
    conn.request("GET", path, headers=dict(headers, **{"X-Stockade-Hop-To": to,
                                                      "X-Stockade-Hop-Face": "api"}))
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


def tls_hop_header(a, b, sid, secret):
    """What the owner's host-to-host listener takes as a hop credential: the derived hop key,
    never the secret; a client's listener takes neither."""
    forged = {"X-Stockade-Forwarded-Tenant": "default", "X-Stockade-Forwarded-Admin": "0"}
    raw = dict(forged, **{"X-Stockade-Host-Auth": secret})
    derived = dict(forged, **{"X-Stockade-Host-Auth": hop_key(secret)})
    for hdrs in (raw, derived):
        status, _, body = a.request("GET", f"/v1/sessions/{sid}", headers=hdrs, token=None)
        assert status == 401, (status, body)
    status, body = hop_get(a, "host-a", f"/v1/sessions/{sid}", raw)
    assert status == 401, (status, body)
    status, body = hop_get(a, "host-a", f"/v1/sessions/{sid}", derived)
    assert status == 200 and json.loads(body)["id"] == sid, (status, body)


def get_through(d, sid):
    status, _, body = d.request("GET", f"/v1/sessions/{sid}")
    return status, body


def tls_rotation(hosts, e2b, sid, s1):
    """A rotation, step by step, each by SIGHUP (hostd/cluster/README.md)."""
    a, b, c = hosts["a"], hosts["b"], hosts["c"]
    s2 = os.urandom(32).hex()
    reloaded = "host credential reloaded"
    write_secrets(a, s1, s2)
    sighup_until(a, reloaded)
    write_secrets(c, s2)
    sighup_until(c, reloaded)
    for d in (b, c):  # b sends S1 (a's current), c sends S2 (a's next)
        status, body = get_through(d, sid)
        assert status == 200, (d.prefix, status, body)
    write_secrets(a, s2)
    sighup_until(a, reloaded)
    status, body = get_through(b, sid)
    err = error_of(body)
    assert status == 502 and err.get("host") == "host-a" and \
        "refused this host's credential" in err.get("message", ""), (status, body)
    assert get_through(c, sid)[0] == 200
    sbx = sid[len("ses_"):]
    # an E2B pass hop from b (S1) too: b takes the envd token of S1, a's hop listener refuses
    # b's hop key, and b says so (502 naming host-a), never the owner's 401 as the caller's
    got = []
    assert envd_health(b, e2b["b"][1], sbx, envd_token(s1, sbx), got) == 502, got
    assert b"refused this host's credential" in got[0] and b"host-a" in got[0], got
    assert envd_health(c, e2b["c"][1], sbx, envd_token(s1, sbx)) == 401  # c holds S2 only
    assert envd_health(c, e2b["c"][1], sbx, envd_token(s2, sbx)) == 502  # passed to a
    # a file that cannot be used keeps the keys in use
    write_secrets(b, "short")
    sighup_until(b, "the host credential in use stays")
    write_secrets(b, s2)
    sighup_until(b, reloaded)
    status, body = get_through(b, sid)
    assert status == 200, (status, body)
    return s2


def route_tls(pg, hosts, sid, e2b, secret, other_ca_tls):
    """Everything above, on scenario route's hosts; returns a line for its summary."""
    a, b = hosts["a"], hosts["b"]
    t0 = time.time()
    tls_serving(a, b, sid)
    tls_e2b(pg, hosts, e2b, sid, secret)
    why = tls_refusals(pg, b, other_ca_tls)
    tls_hop_header(a, b, sid, secret)
    tls_rotation(hosts, e2b, sid, secret)
    return ("HTTPS everywhere (curl and the CLI with the CA, E2B listeners https://, the envd "
            f"pass hop over TLS); an http:// owner and another CA's certificate refused 502 "
            f"({why[:90]}...), nothing sent; the hop key, never the secret; a rotation by "
            f"SIGHUP with no request lost but the step that must fail (these checks "
            f"{time.time() - t0:.1f} s)")


# ------------------------------------------------------------------ race (insecure hops)

def proxy_env(proxy_port):
    env = dict(os.environ)
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "all_proxy"):
        env[name] = f"http://127.0.0.1:{proxy_port}"
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    return env


def race_insecure(pg, hosts, proxy, secret):
    """A hop to an http:// host (insecure_hops): what reaches it is the hop key, and the
    daemon's proxy variables are not followed."""
    rec = Listener()
    try:
        sid = fake_owner(pg, "host-f", f"http://127.0.0.1:{rec.port}")
        status, _, body = hosts["a"].request("GET", f"/v1/sessions/{sid}")
        assert status == 200 and json.loads(body) == {"id": "recorded"}, (status, body)
        assert len(rec.seen) == 1, rec.seen
        head = rec.seen[0]["data"].decode(errors="replace")
        assert f"X-Stockade-Host-Auth: {hop_key(secret)}\r\n" in head, head
        assert secret not in head, head
        assert proxy.seen == [], proxy.seen
    finally:
        rec.close()
    return ("an insecure hop carried the hop key, not the secret, and no proxy of the "
            "daemon's environment was used")
