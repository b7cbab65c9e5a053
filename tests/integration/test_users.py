#!/usr/bin/env python3
"""Users (issue 28): a command runs as root when asked, else as the session's user; files a
root command or a root file call leaves in the workspace come back like any other. A real
stockaded, real guests (minimal image), raw HTTP (no SDK: the node SDK's `user: 'root'` is
in e2b_sdk.mjs).

native   POST /v1/sessions/{id}/exec: `id -u` prints the session's uid without "user" and 0
         with "user": "root"; another user name is 400. A root exec writes a 0600 file and a
         0700 directory in /workspace (only root may read them); closed, the session's
         workspace (the runner's Finalize) has them with their bytes. A second session, cut
         by cancel (the libguestfs salvage, no runner), the same.
e2b      process.Process/Start with `Authorization: Basic root:` runs `id -u` as 0, without it
         as the session's uid; POST /files?username=root writes a file root owns (stat in the
         guest), GET /files?username=root reads it back, the session's user cannot (a 0600
         file written as root is refused to it).
"""
import base64
import http.client
import io
import json
import os
import struct
import sys
import tarfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon  # noqa: E402
from test_e2b_hostile import create_sandbox, e2b_ports  # noqa: E402

POOLS = {"minimal": dict(warm=2, slots=3)}
E2B_CONF = ("[e2b]\nenabled = true\napi_port = 0\nenvd_port = 0\ncreate_wait_s = 120\n"
            "template_map = base=minimal\n")
ROOT = "Basic " + base64.b64encode(b"root:").decode()
USER = "Basic " + base64.b64encode(b"user:").decode()
ROOT_CMD = ("umask 077 && echo secret > root-only.txt && mkdir root-dir && "
            "echo inner > root-dir/in.txt && id -u")


def exec_out(d, sid, argv, **extra):
    """Runs argv in session sid; returns (exit code, stdout, stderr)."""
    after = max([e["seq"] for e in d.events(sid)], default=0)
    eid = d.call("POST", f"/v1/sessions/{sid}/exec", body=dict(argv=argv, **extra))["exec_id"]
    out, err = "", ""
    for ev in d.events(sid, after=after, follow=True):
        if ev.get("exec_id") != eid:
            continue
        if ev["type"] == "exec.stdout":
            out += ev["data"]
        elif ev["type"] == "exec.stderr":
            err += ev["data"]
        elif ev["type"] in ("exec.exited", "exec.failed"):
            return ev.get("exit_code"), out, err


def workspace(d, sid):
    status, headers, body = d.request("GET", f"/v1/sessions/{sid}/workspace")
    assert status == 200, (status, body)
    return tarfile.open(fileobj=io.BytesIO(body)), dict(headers)


def root_files_session(d):
    sid = d.call("POST", "/v1/sessions", body={"pool": "minimal"}, expect=(201,))["id"]
    d.wait_state(sid, "running", timeout=180)
    code, out, _ = exec_out(d, sid, ["sh", "-c", ROOT_CMD], user="root")
    assert code == 0 and out == "0\n", (code, out)
    code, out, _ = exec_out(d, sid, ["sh", "-c", "cat root-only.txt"])
    assert code != 0, ("the session's user read a root 0600 file", out)
    return sid


def check_root_files(d, sid, kind):
    tar, headers = workspace(d, sid)
    names = tar.getnames()
    assert tar.extractfile("root-only.txt").read() == b"secret\n", (kind, names)
    assert tar.extractfile("root-dir/in.txt").read() == b"inner\n", (kind, names)
    print(f"{kind}: the root-owned 0600 file and 0700 directory came back "
          f"({headers.get('X-Stockade-Workspace')})")


def case_native(d):
    sid = d.call("POST", "/v1/sessions", body={"pool": "minimal"}, expect=(201,))["id"]
    d.wait_state(sid, "running", timeout=180)
    code, out, _ = exec_out(d, sid, ["id", "-u"])
    uid = out.strip()
    assert code == 0 and uid.isdigit() and uid != "0", (code, out)
    code, out, _ = exec_out(d, sid, ["id", "-u"], user="root")
    assert code == 0 and out == "0\n", (code, out)
    code, out, _ = exec_out(d, sid, ["id", "-u"], user="")
    assert code == 0 and out == f"{uid}\n", (code, out)
    for bad in ("bob", 0, ["root"]):
        status, _, body = d.request("POST", f"/v1/sessions/{sid}/exec",
                                    body={"argv": ["id"], "user": bad})
        assert status == 400 and b"user" in body, (bad, status, body)
    d.call("DELETE", f"/v1/sessions/{sid}")
    print(f"native ok: id -u = {uid} as the session's user, 0 with \"user\": \"root\"; "
          f"other users 400")
    return uid


class Envd:
    def __init__(self, port, sbx):
        self.port = port
        self.headers = {"E2b-Sandbox-Id": sbx["sandboxID"],
                        "X-Access-Token": sbx["envdAccessToken"],
                        "Connect-Protocol-Version": "1"}

    def run(self, cmd, auth=None):
        """process.Process/Start of sh -c cmd to its end: (exit code, stdout)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        payload = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}}).encode()
        h = dict(self.headers, **{"Content-Type": "application/connect+json"})
        if auth:
            h["Authorization"] = auth
        c.request("POST", "/process.Process/Start", body=struct.pack(">BI", 0, len(payload)) +
                  payload, headers=h)
        r = c.getresponse()
        assert r.status == 200, (r.status, r.read())
        out, code = b"", None
        while True:
            head = r.read(5)
            if len(head) < 5:
                break
            flags, n = struct.unpack(">BI", head)
            msg = json.loads(r.read(n))
            if flags & 2:
                break
            ev = msg.get("event", {})
            out += base64.b64decode(ev.get("data", {}).get("stdout", ""))
            if "end" in ev:
                code = ev["end"].get("exitCode", 0)
        c.close()
        return code, out.decode()

    def files(self, method, path, user=None, body=None):
        q = {"path": path}
        if user:
            q["username"] = user
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        h = dict(self.headers)
        if body is not None:
            h["Content-Type"] = "application/octet-stream"
        c.request(method, "/files?" + urllib.parse.urlencode(q), body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data


def case_e2b(d, uid):
    api, envd_port = e2b_ports(d)
    sbx = create_sandbox(d, api)
    e = Envd(envd_port, sbx)
    assert e.run("id -u") == (0, f"{uid}\n"), "without a user: the session's"
    assert e.run("id -u", USER) == (0, f"{uid}\n"), "user 'user': the session's"
    assert e.run("id -u", ROOT) == (0, "0\n"), "Authorization: Basic root: runs as root"
    st, body = e.files("POST", "/home/user/by-root.txt", "root", b"written as root\n")
    assert st == 200, (st, body)
    assert e.run("stat -c '%u:%g' by-root.txt") == (0, "0:0\n"), "the file is root's"
    assert e.run("chmod 600 by-root.txt", ROOT)[0] == 0
    st, body = e.files("GET", "/home/user/by-root.txt", "root")
    assert st == 200 and body == b"written as root\n", (st, body)
    st, body = e.files("POST", "/home/user/by-user.txt", "user", b"mine\n")
    assert st == 200 and e.run("stat -c %u by-user.txt") == (0, f"{uid}\n"), (st, body)
    # the session's user cannot read root's 0600 file by a command
    assert e.run("cat by-root.txt")[0] != 0
    print(f"e2b ok: Start as root (id -u 0) and as the session's user ({uid}); /files "
          "username=root writes a root-owned file and reads it back")
    sid = "ses_" + sbx["sandboxID"]
    c = http.client.HTTPConnection("127.0.0.1", api, timeout=60)
    c.request("DELETE", f"/sandboxes/{sbx['sandboxID']}", headers={"X-API-KEY": d.token})
    assert c.getresponse().status == 204
    c.close()
    d.wait_state(sid, "ended", timeout=300)
    tar, _ = workspace(d, sid)
    assert tar.extractfile("by-root.txt").read() == b"written as root\n", tar.getnames()
    print("e2b ok: the root-owned file is in the returned workspace")


def main():
    with Daemon(pools=POOLS, extra_conf=E2B_CONF) as d:
        d.wait_ready()
        uid = case_native(d)
        sid = root_files_session(d)
        d.call("DELETE", f"/v1/sessions/{sid}")
        d.wait_state(sid, "ended", timeout=300)
        check_root_files(d, sid, "closed (Finalize)")
        sid = root_files_session(d)
        d.call("POST", f"/v1/sessions/{sid}/cancel", expect=(200, 202))
        d.wait_state(sid, "ended", timeout=600)
        check_root_files(d, sid, "cancelled (salvage)")
        case_e2b(d, uid)
    print("ok")


if __name__ == "__main__":
    main()
