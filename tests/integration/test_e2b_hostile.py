#!/usr/bin/env python3
"""Hostile E2B envd input (issue 14) against a real stockaded and a real guest, speaking the
Connect protocol directly (no SDK, no npm).

process.Process/Start with an unknown key nested 1 900 deep (jansson parses up to 2 048),
then process.Process/List, which used to dump the kept `process` object back on a 512 KiB
handler stack and take the daemon down for every tenant. Now: the deep message is refused
(invalid_argument), a Start with a shallow unknown key runs but the key is not kept, List
answers with only cmd/args/envs/cwd, and the daemon is alive throughout.
"""
import http.client
import json
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon  # noqa: E402

POOLS = {"minimal": dict(warm=1, slots=2)}
E2B_CONF = ("[e2b]\nenabled = true\napi_port = 0\nenvd_port = 0\ncreate_wait_s = 120\n"
            "template_map = base=minimal\n")
DEPTH = 1900


def e2b_ports(d):
    m = d.wait(lambda: re.search(r"E2B API on https?://[0-9.]+:(\d+), envd on https?://[0-9.]+:"
                                 r"(\d+)", d.tail_log(400)), 30, "the E2B listeners")
    return int(m.group(1)), int(m.group(2))


def create_sandbox(d, api):
    c = http.client.HTTPConnection("127.0.0.1", api, timeout=180)
    c.request("POST", "/v2/sandboxes", body=json.dumps({"templateID": "base", "timeout": 300}),
              headers={"X-API-KEY": d.token, "Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    c.close()
    assert r.status == 201, (r.status, body)
    return json.loads(body)


class Envd:
    def __init__(self, port, sbx):
        self.port = port
        self.headers = {"E2b-Sandbox-Id": sbx["sandboxID"],
                        "X-Access-Token": sbx["envdAccessToken"],
                        "Connect-Protocol-Version": "1"}

    def unary(self, method, msg):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("POST", f"/process.Process/{method}", body=json.dumps(msg).encode(),
                  headers=dict(self.headers, **{"Content-Type": "application/json"}))
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, json.loads(body) if body else None

    def start(self, text):
        """Opens a Start stream with the raw JSON text; returns the connection (kept open while
        the process is listed), the HTTP status and the first message (or the error body)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        payload = text.encode()
        c.request("POST", "/process.Process/Start",
                  body=struct.pack(">BI", 0, len(payload)) + payload,
                  headers=dict(self.headers, **{"Content-Type": "application/connect+json"}))
        r = c.getresponse()
        if r.status != 200:  # refused before the stream began: a unary-style Connect error
            return c, r.status, json.loads(r.read())
        flags, n = struct.unpack(">BI", r.read(5))
        assert flags == 0, (flags, r.read(n))
        return c, r.status, json.loads(r.read(n))


def deep_start(cmd_args, extra):
    head = json.dumps({"process": {"cmd": "/bin/sh", "args": cmd_args}})
    return head[:-2] + ', "extra": ' + extra + "}}"


def main():
    with Daemon(pools=POOLS, extra_conf=E2B_CONF) as d:
        api, envd_port = e2b_ports(d)
        d.wait(d.pool_full, 300, "a full pool")
        sbx = create_sandbox(d, api)
        envd = Envd(envd_port, sbx)

        # 1. the deep key: refused before it is parsed; nothing is kept, nothing runs
        deep = deep_start(["-c", "sleep 60"], "[" * DEPTH + "]" * DEPTH)
        c, status, first = envd.start(deep)
        c.close()
        print(f"Start with a key nested {DEPTH} deep: {status} {json.dumps(first)[:200]}")
        refused = first
        status, listed = envd.unary("List", {})
        print(f"List: {status} {json.dumps(listed)[:200]}")
        assert d.proc.poll() is None, "stockaded died:\n" + d.tail_log()
        assert status == 200 and "extra" not in json.dumps(listed), (status, listed)
        assert listed.get("processes", []) == [], listed
        assert refused.get("code") == "invalid_argument", refused
        assert "nests deeper" in refused["message"], refused

        # 2. a shallow unknown key: the process runs, List shows only what Stockade understands
        c, status, first = envd.start(deep_start(["-c", "sleep 60"], '{"a": [[{"b": 1}]]}'))
        assert status == 200 and "start" in first["event"], first
        pid = first["event"]["start"]["pid"]
        status, listed = envd.unary("List", {})
        print(f"List: {status} {json.dumps(listed)}")
        assert d.proc.poll() is None, "stockaded died:\n" + d.tail_log()
        assert status == 200, (status, listed)
        procs = listed["processes"]
        assert [p["pid"] for p in procs] == [pid], listed
        assert procs[0]["config"] == {"cmd": "/bin/sh", "args": ["-c", "sleep 60"], "envs": {}}, \
            procs[0]
        assert "extra" not in json.dumps(listed), listed
        status, _ = envd.unary("SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
        assert status == 200, status
        c.close()
        assert d.get("/v1/health")["status"] == "ok"
        c = http.client.HTTPConnection("127.0.0.1", api, timeout=60)
        c.request("DELETE", f"/sandboxes/{sbx['sandboxID']}", headers={"X-API-KEY": d.token})
        assert c.getresponse().status == 204
        c.close()
    print("ok")


if __name__ == "__main__":
    main()
