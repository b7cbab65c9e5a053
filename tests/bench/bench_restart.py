#!/usr/bin/env python3
"""Benchmark of a daemon restart that keeps sessions (issue 30). Prints figures, never passes
or fails on time. The last line is one JSON object.

A cold daemon (fresh state: templates made, appliance launched) is started and timed to
readiness (a full pool). N sessions each run an exec that prints a line, then waits for a file
the benchmark puts after the restart, then prints another. The daemon is stopped (SIGTERM,
shutdown = keep) and started again on the same state:
  stop_s                   SIGTERM -> the process exited
  restart_to_first_exec_s  the new process started -> the first adopted session answered a
                           new exec (its exit event)
  restart_to_all_exec_s    ... -> every adopted session did
  restart_to_ready_s       ... -> the pool is full again
  cold_start_to_ready_s    the first start -> a full pool (same run, same machine)
  output_bytes_lost        bytes of the blocked execs' expected output that never came (0)
  sessions_ended           sessions that did not survive (0)

    tests/bench/run restart [--sessions N] [--quick]
"""
import argparse
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon  # noqa: E402

BLOCKED = ["sh", "-c", "echo before; while [ ! -e go ]; do sleep 0.2; done; echo after"]
WANT = b"before\nafter\n"


def exited(d, sid, eid, timeout=600):
    return d.wait(lambda: any(e["type"] == "exec.exited" and e.get("exec_id") == eid
                              for e in d.events(sid)), timeout, f"exec {eid} of {sid}", 0.05)


def stdout_of(d, sid, eid):
    return b"".join(e.get("data", "").encode() for e in d.events(sid)
                    if e["type"] == "exec.stdout" and e.get("exec_id") == eid)


def until_exec_answers(d, sid):
    """A new exec on an adopted session, retried while it is being taken over (503)."""
    while True:
        status, _, body = d.request("POST", f"/v1/sessions/{sid}/exec", body={"argv": ["true"]})
        if status == 202:
            return exited(d, sid, json.loads(body)["exec_id"])
        if status != 503:
            raise AssertionError(f"exec on {sid}: {status} {body[:200]!r}")
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    n = 2 if a.quick else a.sessions
    pools = {"minimal": dict(warm=2, slots=n + 2)}
    t = time.monotonic()
    d = Daemon(pools=pools, keep_state=True, shutdown=None).start()
    try:
        d.wait(d.pool_full, 900, "a full pool (cold)")
        cold = time.monotonic() - t
        d.wait_ready()
        live = []
        for _ in range(n):
            sid = d.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": 3600})["id"]
            d.wait_state(sid, "running", 300)
            eid = d.post(f"/v1/sessions/{sid}/exec", {"argv": BLOCKED})["exec_id"]
            live.append((sid, eid))
        for sid, eid in live:
            d.wait(lambda: stdout_of(d, sid, eid), 120, "the first line")
        t = time.monotonic()
    finally:
        rc = d.stop()
    stop_s = time.monotonic() - t
    assert rc == 0, d.tail_log()
    d2 = Daemon(pools=pools, state_dir=d.state, prefix=d.prefix, shutdown=None)
    with d2:
        t = time.monotonic()
        done = []
        for sid, _ in live:
            until_exec_answers(d2, sid)
            done.append(time.monotonic() - t)
        d2.wait(d2.pool_full, 900, "a full pool (restart)")
        ready = time.monotonic() - t
        lost, ended = 0, 0
        for sid, eid in live:
            d2.call("PUT", f"/v1/sessions/{sid}/files/go", raw=b"")
            exited(d2, sid, eid)
            got = stdout_of(d2, sid, eid)
            lost += max(0, len(WANT) - len(got)) if WANT.startswith(got) else len(WANT)
            ended += d2.session(sid)["state"] != "running"
            d2.call("DELETE", f"/v1/sessions/{sid}")
        for sid, _ in live:
            d2.wait(lambda: d2.session(sid)["state"] == "ended", 300, "the close")
    shutil.rmtree(d.state, ignore_errors=True)
    out = {"sessions": n, "stop_s": round(stop_s, 2),
           "restart_to_first_exec_s": round(min(done), 2),
           "restart_to_all_exec_s": round(max(done), 2),
           "restart_to_ready_s": round(ready, 2), "cold_start_to_ready_s": round(cold, 2),
           "output_bytes_lost": lost, "sessions_ended": ended}
    print(f"restart with {n} live sessions: stop {stop_s:.1f} s; first adopted session answered "
          f"an exec {min(done):.2f} s after the start, all {max(done):.2f} s; pool full again "
          f"{ready:.1f} s (a cold start: {cold:.1f} s)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
