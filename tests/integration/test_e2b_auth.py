#!/usr/bin/env python3
"""The E2B faces' promises about who gets in and what is refused (hostd/e2b/README.md),
spoken directly over HTTP (no SDK) to a real stockaded with real guests:

  token      envd without X-Access-Token, with a wrong one, or with another sandbox's: 401,
             on Connect calls and on /files; nothing of the sandbox is read or written
  signed     /files signed URLs (v1_ + base64 sha256 of path:operation:user:token[:exp]): a
             correctly signed read opens the file without the token (the control), and a
             signature made with another token, for another path, for read but used to
             write, expired, or for another sandbox does not
  tenants    another tenant's X-API-KEY gets 404 on get, kill, timeout, connect and sees
             none of it in list; its own sandbox's envd token does not open this one; no or a
             wrong X-API-KEY is 401
  refusals   pause, resume, snapshots, fork, metrics, logs and network are 501; stream
             input and polling-watcher RPCs are Connect "unimplemented" (501), Update (a
             PTY's resize) naming no process is 400; file calls
             outside /workspace (/etc, /tmp, ..) are 400 / invalid_argument
  killed     once killed, every envd path of the sandbox answers 502 (the SDK's "not
             running"), the control plane 404
  head       on both listeners an upload without valid credentials (1 MiB, the control plane's
             cap; 60 MiB to envd) is answered 401 from its head alone: no body byte sent

    test_e2b_auth.py
"""
import base64
import hashlib
import http.client
import json
import os
import socket
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from stockade_fixture import Daemon  # noqa: E402
from test_e2b_hostile import E2B_CONF, create_sandbox, e2b_ports  # noqa: E402

POOLS = {"minimal": dict(warm=2, slots=3)}
CONTENT = b"only the sandbox's own token opens this\n"


def req(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


class Envd:
    def __init__(self, port, sbx, token=None):
        self.port, self.id = port, sbx["sandboxID"]
        self.token = sbx["envdAccessToken"] if token is None else token

    def headers(self, token=True, **extra):
        h = {"E2b-Sandbox-Id": self.id, "Connect-Protocol-Version": "1"}
        if token and self.token:
            h["X-Access-Token"] = self.token
        h.update(extra)
        return h

    def rpc(self, path, msg, token=True):
        status, body = req(self.port, "POST", path, json.dumps(msg).encode(),
                            self.headers(token, **{"Content-Type": "application/json"}))
        return status, json.loads(body) if body else None

    def get_file(self, path, token=True, query=""):
        q = "/files?" + urllib.parse.urlencode({"path": path}) + query
        return req(self.port, "GET", q, headers=self.headers(token))

    def put_file(self, path, data, token=True, query=""):
        q = "/files?" + urllib.parse.urlencode({"path": path}) + query
        return req(self.port, "POST", q, data,
                    self.headers(token, **{"Content-Type": "application/octet-stream"}))


def signed_query(path, operation, token, user="user", expires=None):
    """The SDK's signed URL parameters (sandbox.downloadUrl()/uploadUrl())."""
    text = f"{path}:{operation}:{user}:{token}" + (f":{expires}" if expires is not None else "")
    sig = "v1_" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip("=")
    q = {"signature": sig, "username": user}
    if expires is not None:
        q["signature_expiration"] = str(expires)
    return "&" + urllib.parse.urlencode(q)


def api(port, method, path, key, body=None):
    h = {"Content-Type": "application/json"} if body is not None else {}
    if key is not None:
        h["X-API-KEY"] = key
    status, data = req(port, method, path, json.dumps(body).encode() if body is not None
                        else None, h)
    return status, json.loads(data) if data else None


def case_token(a, b):
    """a: the sandbox; b: the same sandbox addressed with another sandbox's token."""
    assert a.put_file("secret.txt", CONTENT)[0] == 200, "the owner could not write"
    tries = {
        "no token": Envd(a.port, {"sandboxID": a.id, "envdAccessToken": ""}),
        "a wrong token": Envd(a.port, {"sandboxID": a.id,
                                       "envdAccessToken": a.token[:-1] + ("0" if a.token[-1] != "0"
                                                                          else "1")}),
        "another sandbox's token": b,
    }
    for what, e in tries.items():
        st, body = e.get_file("secret.txt")
        assert st == 401 and CONTENT not in body, (what, st, body)
        st, _ = e.put_file("planted.txt", b"x")
        assert st == 401, (what, "write", st)
        st, ans = e.rpc("/process.Process/List", {})
        assert st == 401 and ans.get("code") == "unauthenticated", (what, st, ans)
        st, ans = e.rpc("/filesystem.Filesystem/Stat", {"path": "secret.txt"})
        assert st == 401, (what, "Stat", st, ans)
    assert a.get_file("planted.txt")[0] == 404, "a refused write landed"
    assert a.get_file("secret.txt") == (200, CONTENT)
    print(f"token ok: {', '.join(tries)}: 401 on /files (read, write), Process/List, "
          f"Filesystem/Stat; nothing planted")


def case_signed(a, b):
    bare = Envd(a.port, {"sandboxID": a.id, "envdAccessToken": ""})
    later = int(time.time()) + 600
    st, body = bare.get_file("secret.txt", query=signed_query("secret.txt", "read", a.token))
    assert (st, body) == (200, CONTENT), ("a correct signature is the control", st, body)
    st, body = bare.get_file("secret.txt",
                             query=signed_query("secret.txt", "read", a.token, expires=later))
    assert (st, body) == (200, CONTENT), ("a correct signature with an expiry", st, body)
    forged = {
        "signed with another token": bare.get_file(
            "secret.txt", query=signed_query("secret.txt", "read", b.token)),
        "signed for another path": bare.get_file(
            "secret.txt", query=signed_query("other.txt", "read", a.token)),
        "signed for another user": bare.get_file(
            "secret.txt", query=signed_query("secret.txt", "read", a.token, user="root")
            .replace("username=root", "username=user")),
        "signed to read, used to write": bare.put_file(
            "secret.txt", b"overwritten", query=signed_query("secret.txt", "read", a.token)),
        "expired": bare.get_file(
            "secret.txt", query=signed_query("secret.txt", "read", a.token,
                                             expires=int(time.time()) - 5)),
        "expiry changed after signing": bare.get_file(
            "secret.txt", query=signed_query("secret.txt", "read", a.token, expires=later)
            .replace(str(later), str(later + 3600))),
        "the owner's signature sent to another sandbox": Envd(
            a.port, {"sandboxID": b.id, "envdAccessToken": ""}).get_file(
            "secret.txt", query=signed_query("secret.txt", "read", a.token)),
        "no signature at all": bare.get_file("secret.txt"),
    }
    for what, (st, body) in forged.items():
        assert st == 401 and CONTENT not in body, (what, st, body)
    assert a.get_file("secret.txt") == (200, CONTENT), "a forged write landed"
    print(f"signed ok: the correct signature opens the file; {len(forged)} forgeries 401")


def case_tenants(d, port, a, other_key, other_sbx):
    sid = a.id
    refused = {
        "get": api(port, "GET", f"/sandboxes/{sid}", other_key),
        "kill": api(port, "DELETE", f"/sandboxes/{sid}", other_key),
        "timeout": api(port, "POST", f"/sandboxes/{sid}/timeout", other_key, {"timeout": 5}),
        "connect": api(port, "POST", f"/sandboxes/{sid}/connect", other_key, {"timeout": 5}),
        "connect v2": api(port, "POST", f"/v2/sandboxes/{sid}/connect", other_key,
                          {"timeout": 5}),
        "refresh": api(port, "POST", f"/sandboxes/{sid}/refreshes", other_key, {}),
    }
    for what, (st, body) in refused.items():
        assert st == 404, (what, st, body)
        assert a.token not in json.dumps(body), (what, "leaked the envd token")
    st, listed = api(port, "GET", "/v2/sandboxes", other_key)
    assert st == 200 and sid not in json.dumps(listed), listed
    assert other_sbx["sandboxID"] in json.dumps(listed), ("its own is listed", listed)
    for key, what in ((None, "no key"), ("stk_" + "0" * 64, "an unknown key"),
                      ("not-a-key", "a malformed key")):
        st, body = api(port, "GET", f"/sandboxes/{sid}", key)
        assert st == 401, (what, st, body)
        st, body = api(port, "DELETE", f"/sandboxes/{sid}", key)
        assert st == 401, (what, "kill", st, body)
    st, info = api(port, "GET", f"/sandboxes/{sid}", d.token)
    assert st == 200 and info["sandboxID"] == sid, ("the owner still sees it", st, info)
    assert d.session(f"ses_{sid}")["state"] == "running", "another tenant's call ended it"
    print(f"tenants ok: another tenant's key 404 on {', '.join(refused)}; not in its list; "
          f"no/unknown/malformed key 401; the owner's sandbox untouched")


def case_refusals(port, e, key):
    sid = e.id
    for method, tail in (("POST", "pause"), ("POST", "resume"), ("POST", "snapshots"),
                         ("POST", "fork"), ("GET", "metrics"), ("GET", "logs"),
                         ("PUT", "network")):
        st, body = api(port, method, f"/sandboxes/{sid}/{tail}", key,
                       {} if method != "GET" else None)
        assert st == 501 and body.get("code") == 501 and "not supported" in body["message"], \
            (tail, st, body)
    st, ans = e.rpc("/process.Process/Update", {})  # implemented (issue 28): no process named
    assert st == 400 and ans.get("code") == "invalid_argument", ("Update", st, ans)
    for rpc in ("/process.Process/StreamInput",
                "/filesystem.Filesystem/CreateWatcher",
                "/filesystem.Filesystem/GetWatcherEvents",
                "/filesystem.Filesystem/RemoveWatcher"):
        st, ans = e.rpc(rpc, {})
        assert st == 501 and ans.get("code") == "unimplemented", (rpc, st, ans)
    outside = ["/etc/passwd", "/tmp/x", "../etc/passwd", "/workspace/../etc/passwd", "/"]
    for p in outside:
        st, body = e.get_file(p)
        assert st == 400, ("GET /files", p, st, body)
        assert e.put_file(p, b"x")[0] == 400, ("POST /files", p)
        for rpc, msg in (("Stat", {"path": p}), ("ListDir", {"path": p, "depth": 1}),
                         ("MakeDir", {"path": p + "d"}), ("Remove", {"path": p}),
                         ("Move", {"source": "secret.txt", "destination": p})):
            st, ans = e.rpc(f"/filesystem.Filesystem/{rpc}", msg)
            assert st == 400 and ans.get("code") == "invalid_argument", (rpc, p, st, ans)
    st, ans = e.rpc("/filesystem.Filesystem/Stat", {"path": "/home/user/secret.txt"})
    assert st == 200, ("inside /workspace is the control", st, ans)
    assert e.get_file("secret.txt") == (200, CONTENT), "a refused call changed the file"
    print(f"refusals ok: 7 control-plane paths 501, 5 RPCs unimplemented, {len(outside)} "
          f"paths outside /workspace 400 on /files and 5 filesystem RPCs")


def case_killed(port, e, key):
    st, _ = api(port, "DELETE", f"/sandboxes/{e.id}", key)
    assert st == 204, st
    answers = {
        "GET /health": req(e.port, "GET", "/health", headers=e.headers())[0],
        "GET /files": e.get_file("secret.txt")[0],
        "POST /files": e.put_file("late.txt", b"x")[0],
        "Process/List": e.rpc("/process.Process/List", {})[0],
        "Filesystem/Stat": e.rpc("/filesystem.Filesystem/Stat", {"path": "secret.txt"})[0],
    }
    assert all(st == 502 for st in answers.values()), answers
    st, _ = api(port, "GET", f"/sandboxes/{e.id}", key)
    assert st == 404, ("the control plane forgets a killed sandbox", st)
    print(f"killed ok: {', '.join(answers)} all 502; GET /sandboxes/{{id}} 404")


def unauthenticated_head(port, path, headers, length):
    """Sends only the head of a POST of length bytes; the status answered without a body
    byte sent, or None if the server waited for the body (10 s)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n" + \
            "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        sock.sendall(head.encode())
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        return int(data.split()[1]) if data.startswith(b"HTTP/1.1 ") else None
    except socket.timeout:
        return None
    finally:
        sock.close()


def case_head(api_port, e):
    q = "/files?" + urllib.parse.urlencode({"path": "/workspace/big.bin"})
    api_max, envd_big = 1 << 20, 60 << 20  # the control plane's body cap; an upload
    cases = [("API, no X-API-KEY", api_port, "/v2/sandboxes", {}, api_max),
             ("API, wrong X-API-KEY", api_port, "/v2/sandboxes", {"X-API-KEY": "e2b_wrong"},
              api_max),
             ("envd, no token", e.port, q, e.headers(token=False), envd_big),
             ("envd, wrong token", e.port, q, {**e.headers(token=False),
                                               "X-Access-Token": "wrong"}, envd_big)]
    for what, port, path, headers, length in cases:
        st = unauthenticated_head(port, path, headers, length)
        assert st == 401, (what, st)
    print(f"head ok: {len(cases)} unauthenticated uploads (1 MiB to the API, 60 MiB to envd) "
          "answered 401 with no body byte sent")


def main():
    with Daemon(pools=POOLS, extra_conf=E2B_CONF) as d:
        api_port, envd_port = e2b_ports(d)
        d.wait(d.pool_full, 300, "a full pool")
        other = d.call("POST", "/v1/admin/tenants", body={"name": "e2b-other"},
                       expect=(201,), token=d.admin_token)
        mine = create_sandbox(d, api_port)
        d.wait(d.pool_full, 300, "a full pool again")
        theirs = api(api_port, "POST", "/v2/sandboxes", other["token"],
                     {"templateID": "base", "timeout": 300})
        assert theirs[0] == 201, theirs
        theirs = theirs[1]
        a = Envd(envd_port, mine)
        b = Envd(envd_port, mine, token=theirs["envdAccessToken"])  # mine, their token
        case_token(a, b)
        case_signed(a, Envd(envd_port, theirs))
        case_tenants(d, api_port, a, other["token"], theirs)
        case_refusals(api_port, a, d.token)
        case_head(api_port, a)
        case_killed(api_port, a, d.token)
        assert api(api_port, "DELETE", f"/sandboxes/{theirs['sandboxID']}",
                   other["token"])[0] == 204
        assert d.get("/v1/health")["status"] == "ok"
    print("ok")


if __name__ == "__main__":
    main()
