#!/usr/bin/env python3
"""A daemon restart that keeps sessions (issue 30) against a real stockaded, real libvirtd and
real guests. One scenario per run:

    test_adopt.py keep|end|kill9

keep: [daemon] shutdown left at its default (keep). A session with a file, a background
process and an exec blocked on a file the test puts later, and a second session with a short
lifetime, live across a SIGTERM and a new start: the same id answers, the file is there, the
background process runs, the blocked exec goes on when the file comes and its exit is an event
of the same exec id, a new exec works with a new id, seqs continue with no gap or duplicate,
and the short session ends timed_out, never before its deadline. end: shutdown = end ends the
session host_shutdown and leaves no guest. kill9: a kill -9 instead of a stop adopts the same
way (the store and the guests are all a start needs).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon, wall  # noqa: E402

POOLS = {"minimal": dict(warm=2, slots=3)}
# "before", then waits for the file go (put by the test after the restart), then "after":
# output and exit across the restart, shown by causality rather than by timing
BLOCKED = ["sh", "-c", "echo before; while [ ! -e go ]; do sleep 0.2; done; echo after"]
BACKGROUND = ["sh", "-c", "sleep 100000 >/dev/null 2>&1 & echo $! > bg.pid; echo started"]
SHORT_S = 75  # the short session's lifetime: over a restart here (~5-20 s) at most once


def exec_(d, sid, argv, timeout_s=600):
    return d.post(f"/v1/sessions/{sid}/exec", {"argv": argv, "timeout_s": timeout_s})["exec_id"]


def wait_event(d, sid, pred, what, timeout=120):
    return d.wait(lambda: next((e for e in d.events(sid) if pred(e)), None), timeout, what)


def exited(d, sid, eid, timeout=120):
    return wait_event(d, sid, lambda e: e["type"] == "exec.exited" and e.get("exec_id") == eid,
                      f"exec {eid} of {sid} to exit", timeout)


def stdout_of(d, sid, eid):
    return b"".join(e["data"].encode() if isinstance(e.get("data"), str) else b""
                    for e in d.events(sid)
                    if e["type"] == "exec.stdout" and e.get("exec_id") == eid)


def domain_runs(name):
    r = subprocess.run(["virsh", "-c", "qemu:///system", "domstate", name],
                       capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == "running"


def check_seq(events):
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), f"seqs not 1..n without a duplicate: {seqs}"


def before_restart(d):
    """The long session (file, background process, blocked exec) and the short one."""
    sid = d.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": 900})["id"]
    d.wait_state(sid, "running")
    d.call("PUT", f"/v1/sessions/{sid}/files/kept.txt", raw=b"kept\n")
    bg = exec_(d, sid, BACKGROUND)
    assert exited(d, sid, bg)["exit_code"] == 0
    blocked = exec_(d, sid, BLOCKED)
    wait_event(d, sid, lambda e: e["type"] == "exec.stdout" and e.get("exec_id") == blocked,
               "the blocked exec's first line")
    short = d.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": SHORT_S})["id"]
    d.wait_state(short, "running")
    return sid, bg, blocked, short


def after_restart(d2, sid, bg, blocked, short, n_before):
    # the record says running from the start; the guest answers once adopted (until then a
    # request is 503 "being taken over")
    wait_event(d2, sid, lambda e: e["type"] == "session.adopted", "the adoption", 300)
    assert d2.session(sid)["state"] == "running"
    d2.call("PUT", f"/v1/sessions/{sid}/files/go", raw=b"")  # a file op on the adopted guest
    x = exited(d2, sid, blocked)
    assert x["exit_code"] == 0, x
    assert stdout_of(d2, sid, blocked) == b"before\nafter\n", stdout_of(d2, sid, blocked)
    status, _, body = d2.request("GET", f"/v1/sessions/{sid}/files/kept.txt")
    assert status == 200 and body == b"kept\n", (status, body)
    alive = exec_(d2, sid, ["sh", "-c", "kill -0 $(cat bg.pid) && echo alive"])
    assert alive > blocked > bg, (alive, blocked, bg)  # no exec id reused
    assert exited(d2, sid, alive)["exit_code"] == 0
    assert stdout_of(d2, sid, alive) == b"alive\n", stdout_of(d2, sid, alive)
    ev = list(d2.events(sid))
    check_seq(ev)
    types = [e["type"] for e in ev]
    assert "session.adopted" in types and len(ev) > n_before, types
    # the short session: ended by its own timer, never before its deadline
    t = d2.wait(lambda: (x := d2.session(short))["state"] == "ended" and x, SHORT_S + 300,
                "the short session's timeout")
    assert t["end_reason"] == "timed_out", t
    assert wall(t["stopped_at"]) >= wall(t["started_at"]) + SHORT_S - 1, t
    check_seq(list(d2.events(short)))
    check_drain(d2, sid)
    d2.call("DELETE", f"/v1/sessions/{sid}")
    s = d2.wait(lambda: (x := d2.session(sid))["state"] == "ended" and x, 300, "the close")
    assert s["end_reason"] == "closed", s
    return s


def check_drain(d, sid):
    """Drain: no new session (503, the reason), health says so, the live one still works."""
    assert d.unix_call("POST", "/v1/admin/drain")["draining"] is True
    h = d.get("/v1/health")
    assert h["status"] == "draining" and h["draining"] is True, h
    status, _, body = d.request("POST", "/v1/sessions", body={"pool": "minimal"})
    assert status == 503 and b"draining" in body, (status, body)
    assert exited(d, sid, exec_(d, sid, ["true"]))["exit_code"] == 0
    r = d.unix_call("DELETE", "/v1/admin/drain")
    assert r["draining"] is False and r["live"] >= 1, r
    assert d.get("/v1/health")["status"] == "ok"


def restart_keeps(kill):
    d = Daemon(pools=POOLS, keep_state=True, shutdown=None).start()  # the default: keep
    try:
        d.wait_ready()
        sid, bg, blocked, short = before_restart(d)
        guest = d.session(sid).get("guest") or ""
        n_before = len(list(d.events(sid)))
    finally:
        if kill:
            d.kill9()
        else:
            assert d.stop() == 0, d.tail_log()
    if guest:
        assert domain_runs(guest), f"{guest} did not outlive the daemon"
    d2 = Daemon(pools=POOLS, state_dir=d.state, prefix=d.prefix, shutdown=None)
    with d2:
        t0 = time.monotonic()
        after_restart(d2, sid, bg, blocked, short, n_before)
        took = time.monotonic() - t0
    import shutil
    shutil.rmtree(d.state, ignore_errors=True)
    how = "kill -9" if kill else "SIGTERM (shutdown = keep)"
    print(f"{how}: session {sid} adopted: file kept, background process alive, blocked exec "
          f"finished as exec {blocked} with its output, seqs 1..n, short session timed_out "
          f"({took:.0f} s after the start)")


def scenario_end():
    d = Daemon(pools=POOLS, keep_state=True, shutdown="end").start()
    try:
        d.wait_ready()
        sid = d.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": 900})["id"]
        d.wait_state(sid, "running")
    finally:
        assert d.stop() == 0, d.tail_log()
    assert not d.leftover_domains(), d.leftover_domains()
    d2 = Daemon(pools=POOLS, state_dir=d.state, prefix=d.prefix, shutdown="end")
    with d2:
        s = d2.session(sid)
        assert s["state"] == "ended" and s["end_reason"] == "host_shutdown", s
    import shutil
    shutil.rmtree(d.state, ignore_errors=True)
    print("shutdown = end: the session ended host_shutdown, no guest left")


SCENARIOS = {"keep": lambda: restart_keeps(False), "kill9": lambda: restart_keeps(True),
             "end": scenario_end}

if __name__ == "__main__":
    for name in sys.argv[1:] or SCENARIOS:
        SCENARIOS[name]()
