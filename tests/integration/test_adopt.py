#!/usr/bin/env python3
"""A daemon restart that keeps sessions (issue 30) against a real stockaded, real libvirtd and
real guests: one state directory (and domain prefix) through four daemon runs, each phase
checking what the one before it left.

    test_adopt.py

keep (run 1 -> SIGTERM -> run 2): [daemon] shutdown left at its default (keep). A long session
(a file, a background process, an exec blocked on a file the test puts later) and a short one
live across the stop and a new start: the guest outlived the daemon, the same id answers, the
file is there, the background process runs, the blocked exec goes on when the file comes and
its exit is an event of the same exec id, a new exec gets a new id, seqs continue with no gap
or duplicate, the short session's "session.kept" deadline is its lifetime's and it ends
timed_out, never before that deadline; drain refuses new sessions while the adopted one works.

kill9 (run 2 -> kill -9 -> run 3): the same checks for a long and a short session the second
run made (the deadline then comes from the record: no "session.kept" was written).

drain --timeout (run 3): with sessions live, `stockade drain --timeout 1` names them and exits
124 (--json: the counts, the sessions, timed_out); `--timeout` long enough returns 0 only once
every session ended (one closed, one timed out while it waited); the route refuses a bad
timeout_s.

end (run 3 -> SIGTERM -> run 4): shutdown = end ends a live session host_shutdown and leaves no
guest.

Waits are for timers the test set: a short session's lifetime is derived from floors measured
in the same run (run 1's start to a full pool; run 2's start to its adoption), so its deadline falls
after the adoption that must re-arm it, and each adoption's "timeout_left_ms" shows it did
(a deadline that passed while the daemon was down would fire at once and prove nothing).
"""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stockade_fixture import Daemon, wall  # noqa: E402
from cli_helpers import Cli  # noqa: E402

POOLS = {"minimal": dict(warm=2, slots=3)}
# "before", then waits for the file go (put by the test after the restart), then "after":
# output and exit across the restart, shown by causality rather than by timing
BLOCKED = ["sh", "-c", "echo before; while [ ! -e go ]; do sleep 0.2; done; echo after"]
BACKGROUND = ["sh", "-c", "sleep 100000 >/dev/null 2>&1 & echo $! > bg.pid; echo started"]
# A short lifetime is a multiple of a floor measured in the same run, and at least FLOOR_S:
# run 1's pool fill for the SIGTERM restart (a stop and a start; measured, under load, the
# fill took about twice as long as the whole restart), the SIGTERM restart's start-to-adoption
# for the kill -9 (no stop to wait for). Each adoption's timeout_left_ms checks the margin held.
MARGIN_FILL = 1.5
MARGIN = 3
FLOOR_S = 20
SETTLE_S = 300  # after a deadline: the end's salvage (TCG, a loaded host)


def exec_(d, sid, argv, timeout_s=600):
    return d.post(f"/v1/sessions/{sid}/exec", {"argv": argv, "timeout_s": timeout_s})["exec_id"]


def wait_event(d, sid, pred, what, timeout=120):
    return d.wait(lambda: next((e for e in d.events(sid) if pred(e)), None), timeout, what)


def exited(d, sid, eid, timeout=120):
    return wait_event(d, sid, lambda e: e["type"] == "exec.exited" and e.get("exec_id") == eid,
                      f"exec {eid} of {sid} to exit", timeout)


def adoption(d, sid, since_seq):
    """The session's "session.adopted" event after seq since_seq; a session that ends instead
    (not adopted: host_restart) fails at once rather than at the wait's end."""
    e = wait_event(d, sid, lambda e: e["seq"] > since_seq and (
        e["type"] == "session.adopted" or
        (e["type"] == "session.state" and ("reason" in e or e.get("state") == "ended"))),
        f"session {sid}'s adoption", 300)
    assert e["type"] == "session.adopted", f"session {sid} was not adopted: {e}"
    return e


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


class Long:
    """A session with a file, a background process and an exec blocked on a file."""

    def __init__(self, d):
        self.sid = d.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": 900})["id"]
        d.wait_state(self.sid, "running")
        d.call("PUT", f"/v1/sessions/{self.sid}/files/kept.txt", raw=b"kept\n")
        self.bg = exec_(d, self.sid, BACKGROUND)
        assert exited(d, self.sid, self.bg)["exit_code"] == 0
        self.blocked = exec_(d, self.sid, BLOCKED)
        wait_event(d, self.sid,
                   lambda e: e["type"] == "exec.stdout" and e.get("exec_id") == self.blocked,
                   "the blocked exec's first line")
        self.guest = d.session(self.sid).get("guest") or ""
        self.n_before = 0

    def before_stop(self, d):
        self.n_before = len(list(d.events(self.sid)))

    def check_adopted(self, d2):
        sid = self.sid
        # the record says running from the start; the guest answers once adopted (until then a
        # request is 503 "being taken over")
        adoption(d2, sid, self.n_before)
        assert d2.session(sid)["state"] == "running"
        d2.call("PUT", f"/v1/sessions/{sid}/files/go", raw=b"")  # a file op on the adopted guest
        x = exited(d2, sid, self.blocked)
        assert x["exit_code"] == 0, x
        out = stdout_of(d2, sid, self.blocked)
        assert out == b"before\nafter\n", out
        status, _, body = d2.request("GET", f"/v1/sessions/{sid}/files/kept.txt")
        assert status == 200 and body == b"kept\n", (status, body)
        alive = exec_(d2, sid, ["sh", "-c", "kill -0 $(cat bg.pid) && echo alive"])
        assert alive > self.blocked > self.bg, (alive, self.blocked, self.bg)  # no id reused
        assert exited(d2, sid, alive)["exit_code"] == 0
        assert stdout_of(d2, sid, alive) == b"alive\n", stdout_of(d2, sid, alive)
        ev = list(d2.events(sid))
        check_seq(ev)
        types = [e["type"] for e in ev]
        assert "session.adopted" in types and len(ev) > self.n_before, types

    def close(self, d):
        d.call("DELETE", f"/v1/sessions/{self.sid}")
        s = d.wait(lambda: (x := d.session(self.sid))["state"] == "ended" and x, SETTLE_S,
                   "the close")
        assert s["end_reason"] == "closed", s


class Short:
    """A session whose lifetime ends after the next adoption: its timer must be re-armed."""

    def __init__(self, d, lifetime_s):
        self.lifetime_s = lifetime_s
        self.sid = d.call("POST", "/v1/sessions",
                          body={"pool": "minimal", "timeout_s": lifetime_s})["id"]
        s = d.wait_state(self.sid, "running")
        self.deadline = wall(s["started_at"]) + lifetime_s

    def left_s(self):
        return self.deadline - time.time()

    def check_kept(self, d):
        """A keep stop wrote its deadline: the lifetime's, as a wall-clock time."""
        k = wait_event(d, self.sid, lambda e: e["type"] == "session.kept", "session.kept")
        assert abs(k["deadline_unix_ms"] / 1000 - self.deadline) <= 1, (k, self.deadline)

    def check_adopted(self, d):
        """The adoption re-armed its timer for what was left, not at once, not afresh."""
        a = adoption(d, self.sid, 0)
        assert a["timeout_left_ms"] > 0, \
            f"adopted {-self.left_s():.1f} s after its deadline: the restart outlasted the " \
            f"{self.lifetime_s} s lifetime (raise MARGIN_FILL or MARGIN): this run proves nothing: {a}"
        assert abs(wall(a["ts"]) + a["timeout_left_ms"] / 1000 - self.deadline) <= 1, \
            (a, self.deadline)

    def check_timed_out(self, d):
        t = d.wait(lambda: (x := d.session(self.sid))["state"] == "ended" and x,
                   max(self.left_s(), 0) + SETTLE_S, "the short session's timeout")
        assert t["end_reason"] == "timed_out", t
        assert wall(t["stopped_at"]) >= self.deadline - 1, (t, self.deadline)
        check_seq(list(d.events(self.sid)))


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


RUNS = []  # every daemon run, for the clean-up after a failure


def again(d, shutdown):
    """The next run on the same state directory and domain prefix."""
    RUNS.append(Daemon(pools=POOLS, state_dir=d.state, prefix=d.prefix, shutdown=shutdown))
    return RUNS[-1].start()


def scrap(d):
    """After a failure: no daemon, no guest of this prefix left (kept ones included)."""
    if d.proc:
        d.kill9()
    for n in d.leftover_domains():
        if n.startswith("qemu pid "):
            with contextlib.suppress(OSError):
                os.kill(int(n.split()[2]), signal.SIGKILL)
        else:
            subprocess.run(["virsh", "-c", "qemu:///system", "destroy", n], capture_output=True)


def phase_keep(d1):
    """Run 1, SIGTERM with shutdown = keep, run 2 adopts."""
    t0 = time.monotonic()
    d1.start()
    d1.wait(d1.pool_full, 300, "a full pool")
    # a start that fills the pool (a template booted and saved, clones restored): more work
    # than a restart's adoption. Run 1 needs no extraction appliance (nothing ends under it):
    # its launch is not waited for.
    floor_s = time.monotonic() - t0
    long1 = Long(d1)
    short1 = Short(d1, max(FLOOR_S, round(MARGIN_FILL * floor_s)))
    long1.before_stop(d1)
    t_stop = time.monotonic()
    assert d1.stop() == 0, d1.tail_log()
    assert long1.guest and domain_runs(long1.guest), f"{long1.guest} did not outlive the daemon"
    t_start = time.monotonic()
    d2 = again(d1, None)
    adoption(d2, long1.sid, long1.n_before)
    restart_s, adopt_s = time.monotonic() - t_stop, time.monotonic() - t_start
    short1.check_kept(d2)
    short1.check_adopted(d2)
    long1.check_adopted(d2)
    check_drain(d2, long1.sid)
    long1.close(d2)
    print(f"keep: session {long1.sid} adopted {restart_s:.1f} s after the SIGTERM, {adopt_s:.1f} s "
          f"after the start (run 1 filled "
          f"its pool in {floor_s:.1f} s): file kept, "
          f"background process alive, blocked exec {long1.blocked} finished with its output, "
          f"seqs 1..n; short session ({short1.lifetime_s} s) re-armed", flush=True)
    return d2, short1, adopt_s


def phase_kill9(d2, short1, adopt_s):
    """Run 2 makes a long and a short session, is killed -9 once run 1's short one timed out
    under it; run 3 adopts."""
    long2 = Long(d2)  # while short1's timer runs
    short1.check_timed_out(d2)
    short2 = Short(d2, max(FLOOR_S, round(MARGIN * adopt_s)))
    long2.before_stop(d2)
    d2.kill9()
    assert long2.guest and domain_runs(long2.guest), f"{long2.guest} did not outlive the kill"
    d3 = again(d2, "end")  # shutdown is read at the stop: run 3 adopts all the same
    short2.check_adopted(d3)
    long2.check_adopted(d3)
    check_drain(d3, long2.sid)
    print(f"kill -9: session {long2.sid} adopted the same way; run 1's short session timed out "
          f"under run 2; run 2's ({short2.lifetime_s} s) re-armed", flush=True)
    return d3, long2, short2


def phase_drain(d3, long2, short2):
    """Run 3 drains with a bound while its two sessions are live: a bound they outlast times
    out naming them (exit 124, the host stays draining); one they end within returns 0 only
    once both ended (the long one is closed, the short one times out meanwhile)."""
    cli = Cli(d3)
    for method, q in (("POST", "abc"), ("POST", "3601"), ("POST", "-1"), ("POST", ""),
                      ("GET", "1x"), ("DELETE", "1")):
        status, _, body = d3.request(method, f"/v1/admin/drain?timeout_s={q}", unix=True)
        assert status == 400 and b"timeout_s" in body, (method, q, status, body)
    r = d3.unix_call("POST", "/v1/admin/drain?timeout_s=0")
    assert r["timed_out"] is True and r["live"] == 2, r
    assert {x["id"] for x in r["sessions"]} == {long2.sid, short2.sid}, r
    rc, out, err = cli.run("drain", "--timeout", "1")
    assert rc == 124 and "draining: 2 live session(s)" in out, (rc, out, err)
    assert "2 session(s) still live after 1 s" in err and long2.sid in err, err
    rc, out, err = cli.run("drain", "--timeout", "1", "--json")
    j = json.loads(out)
    assert rc == 124 and j["timed_out"] is True and j["live"] == 2, (rc, out, err)
    assert d3.session(long2.sid)["state"] == "running"  # it ends after that timeout: still is
    wait_s = int(max(short2.left_s(), 0) + 2 * SETTLE_S)  # what the two need, and more
    drain = cli.popen("drain", "--timeout", str(wait_s), "--json")
    long2.close(d3)  # live when the drain began: the test closes it only now
    out, err = drain.communicate(timeout=wait_s + 60)
    states = {sid: d3.session(sid) for sid in (long2.sid, short2.sid)}
    assert drain.returncode == 0, (drain.returncode, out, err)
    j = json.loads(out)
    assert j["live"] == 0 and j["timed_out"] is False and j["draining"] is True, j
    assert all(x["state"] == "ended" for x in states.values()), states  # ended before it said so
    short2.check_timed_out(d3)
    rc, out, _ = cli.run("drain", "--off")
    assert rc == 0 and out.startswith("taking sessions"), (rc, out)
    print(f"drain --timeout: 1 s timed out (124) naming both sessions; {wait_s} s returned 0 "
          f"once the closed and the timed-out one ended", flush=True)


def phase_end(d3):
    """Run 3 (shutdown = end) stops with a live session: it ends host_shutdown, no guest left."""
    sid = d3.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": 900})["id"]
    d3.wait_state(sid, "running")
    assert d3.stop() == 0, d3.tail_log()
    assert not d3.leftover_domains(), d3.leftover_domains()
    d4 = again(d3, "end")
    s = d4.session(sid)
    assert s["state"] == "ended" and s["end_reason"] == "host_shutdown", s
    d4.__exit__(None, None, None)  # rc 0, no domain left
    print("shutdown = end: the session ended host_shutdown, no guest left", flush=True)


def main():
    d1 = Daemon(pools=POOLS, shutdown=None)  # the default: keep; the build's cached snapshots
    RUNS.append(d1)
    try:
        d2, short1, adopt_s = phase_keep(d1)
        d3, long2, short2 = phase_kill9(d2, short1, adopt_s)
        phase_drain(d3, long2, short2)
        phase_end(d3)
    except BaseException:
        print("---- stockaded log (tail) ----\n" + RUNS[-1].tail_log(80), file=sys.stderr)
        for d in reversed(RUNS):
            scrap(d)
        raise
    finally:
        if d1.own_state:
            shutil.rmtree(d1.state, ignore_errors=True)


if __name__ == "__main__":
    main()
