#!/usr/bin/env python3
"""E2B handlers do not hold their connection thread while the loop works (issue 17, "two front
doors"), against a real stockaded and a real guest, raw HTTP (no SDK).

One guest (slots = 1) is taken by a first create; WAITING more creates then wait for a guest
that never comes. While they wait, no E2B connection thread may be inside a handler
(status.json's e2b_handlers_running, rewritten every 2 s: a handler that blocks until the
guest runs counts, one that handed the create to the loop does not), and a quick control-plane
request (GET /health, the list) is answered while they still wait (not behind them: no create
answered yet, all still pending after it). Then each waiting create gets today's answer when
its create wait runs out (not before it): 503 "no guest was ready within the create wait", its
session cancelled. The first sandbox then takes the file calls that are several round trips
on the loop: an upload of three parts whose last is refused (the two before it are written),
and ListDir at depth 2 (depth first).
"""
import http.client
import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon  # noqa: E402

POOLS = {"minimal": dict(warm=1, slots=1)}
CREATE_WAIT_S = 20
E2B_CONF = (f"[e2b]\nenabled = true\napi_port = 0\nenvd_port = 0\n"
            f"create_wait_s = {CREATE_WAIT_S}\ntemplate_map = base=minimal\n")
WAITING = 3


def e2b_ports(d):
    m = d.wait(lambda: re.search(r"E2B API on http://[0-9.]+:(\d+), envd on http://[0-9.]+:(\d+)",
                                 d.tail_log(400)), 30, "the E2B listeners")
    return int(m.group(1)), int(m.group(2))


def api_call(d, api, method, path, body=None, timeout=120):
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", api, timeout=timeout)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"X-API-KEY": d.token, "Content-Type": "application/json"})
    r = c.getresponse()
    payload = r.read()
    c.close()
    return r.status, json.loads(payload) if payload else None, time.time() - t0


def create(d, api):
    return api_call(d, api, "POST", "/v2/sandboxes", {"templateID": "base", "timeout": 300})


def envd_call(port, sbx, method, path, body, ctype):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body,
              headers={"E2b-Sandbox-Id": sbx["sandboxID"], "X-Access-Token": sbx["envdAccessToken"],
                       "Content-Type": ctype})
    r = c.getresponse()
    payload = r.read()
    c.close()
    if "json" not in (r.getheader("Content-Type") or ""):
        return r.status, payload
    return r.status, json.loads(payload) if payload else None


def multipart(parts):
    boundary = "stockadeloop"
    out = b""
    for name, data in parts:
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"{name}\"\r\n\r\n").encode() + data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def files_on_the_loop(envd, sbx):
    body, ctype = multipart([("/home/user/a/b/one.txt", b"one"), ("/home/user/a/two.txt", b"two"),
                             ("/home/user/../escape.txt", b"no")])
    status, ans = envd_call(envd, sbx, "POST", "/files", body, ctype)
    print(f"upload of 3 parts, the last refused: {status} {ans}")
    assert status == 400 and "escape.txt" in ans["message"], (status, ans)
    st, ans = envd_call(envd, sbx, "POST", "/filesystem.Filesystem/ListDir",
                        json.dumps({"path": "/home/user/a", "depth": 2}), "application/json")
    paths = [e["path"] for e in ans["entries"]] if st == 200 else ans
    print(f"ListDir depth 2: {st} {paths}")
    assert st == 200 and sorted(paths) == ["/home/user/a/b", "/home/user/a/b/one.txt",
                                           "/home/user/a/two.txt"], (st, ans)
    assert paths.index("/home/user/a/b/one.txt") == paths.index("/home/user/a/b") + 1, paths
    st, ans = envd_call(envd, sbx, "POST", "/filesystem.Filesystem/ListDir",
                        json.dumps({"path": "/home/user/a"}), "application/json")
    assert st == 200 and len(ans["entries"]) == 2, (st, ans)
    status, ans = envd_call(envd, sbx, "GET", "/files?path=/home/user/a/b/one.txt", None, "")
    assert status == 200 and ans == b"one", (status, ans)


def status_after(d, t):
    """status.json as the daemon wrote it after wall time t."""
    path = os.path.join(d.state, "state", "status.json")

    def fresh():
        try:
            if os.stat(path).st_mtime > t:
                with open(path) as f:
                    return json.load(f)
        except (OSError, ValueError):
            return None
        return None
    return d.wait(fresh, 10, "status.json rewritten")


def main():
    with Daemon(pools=POOLS, extra_conf=E2B_CONF) as d:
        api, envd = e2b_ports(d)
        d.wait(d.pool_full, 300, "a full pool")
        status, first, took = create(d, api)
        assert status == 201, (status, first)
        print(f"first create: 201 in {took:.2f} s (the only guest)")

        results = []
        threads = [threading.Thread(target=lambda: results.append(create(d, api)))
                   for _ in range(WAITING)]
        for t in threads:
            t.start()
        d.wait(lambda: sum(s["state"] == "pending" for s in d.all_sessions()) >= WAITING, 30,
               f"{WAITING} creates waiting for a guest")
        st = status_after(d, time.time())
        busy = st["e2b_handlers_running"]
        print(f"{WAITING} creates waiting: e2b_handlers_running = {busy}")

        def still_waiting():
            return not results and \
                sum(s["state"] == "pending" for s in d.all_sessions()) >= WAITING

        status, body, took = api_call(d, api, "GET", "/health")
        print(f"GET /health meanwhile: {status} in {took * 1000:.1f} ms")
        assert status == 200 and still_waiting(), (status, took, results)
        status, listed, took = api_call(d, api, "GET", "/v2/sandboxes")
        print(f"GET /v2/sandboxes meanwhile: {status} in {took * 1000:.1f} ms, {len(listed)} listed")
        assert status == 200 and still_waiting(), (status, took, results)
        assert [s["sandboxID"] for s in listed] == [first["sandboxID"]], listed
        assert busy == 0, f"{busy} E2B connection threads are held inside a handler"

        for t in threads:
            t.join(CREATE_WAIT_S + 60)
        assert len(results) == WAITING, results
        for status, body, took in results:
            print(f"waiting create: {status} after {took:.1f} s: {body}")
            assert status == 503, (status, body)
            assert body["code"] == 503, body
            assert "no guest was ready within the create wait" in body["message"], body
            assert took >= CREATE_WAIT_S - 2, took  # its wait ran out: not before it
        d.wait(lambda: not any(s["state"] == "pending" for s in d.all_sessions()), 30,
               "the waiting creates' sessions to be cancelled")

        files_on_the_loop(envd, first)
        status, _, _ = api_call(d, api, "DELETE", f"/sandboxes/{first['sandboxID']}")
        assert status == 204, status
        assert d.proc.poll() is None, "stockaded died:\n" + d.tail_log()
    print("ok")


if __name__ == "__main__":
    main()
