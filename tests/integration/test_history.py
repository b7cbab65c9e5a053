#!/usr/bin/env python3
"""What the daemon keeps of a session and how a client reads it back, through the raw API of
a real stockaded (real libvirtd and guests), not the CLI:

  resume     GET /events?after=SEQ from the middle of a stored stream gives exactly the
             events after SEQ; a follow cut mid-stream and reopened with after= the last seq
             it saw gives every event once, in order; after= the last seq gives nothing
  heartbeat  a quiet followed stream gets {"type":"heartbeat","ts"} lines (no seq), not before
             15 s of quiet, and still carries the session's events after them
  retention  the daemon started with [sessions] artifact_max_age_h = 1 removes the sessions
             that ended more than an hour ago (their folder, record and events) and keeps the
             younger ones: retention run once for real (the end times are moved back in the
             stopped daemon's database, as an hour passing would)

    test_history.py
"""
import http.client
import json
import os
import shutil
import socket
import sqlite3
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon  # noqa: E402

MINIMAL = {"minimal": dict(warm=1, slots=2)}
TICKER = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo tick $i; sleep 0.4; done"
HEARTBEAT_S = 15  # API_HEARTBEAT_USEC (hostd/api/api_internal.h), API.md "events"


def open_events(d, sid, after, follow, timeout=120):
    q = f"/v1/sessions/{sid}/events?after={after}" + ("&follow=1" if follow else "")
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=timeout)
    conn.request("GET", q, headers=d.auth_headers(q))
    r = conn.getresponse()
    assert r.status == 200, (q, r.status, r.read())
    assert r.getheader("Content-Type", "").startswith("application/x-ndjson"), r.getheaders()
    return conn, r


def raw_lines(d, sid, after=0, follow=False, timeout=120):
    """Every line of the stream as parsed JSON, heartbeats included, until it ends."""
    conn, r = open_events(d, sid, after, follow, timeout)
    try:
        return [json.loads(line) for line in iter(r.readline, b"") if line.strip()]
    finally:
        conn.close()


def task(d, argv, timeout_s=120):
    return d.call("POST", "/v1/tasks", body={"pool": "minimal", "argv": argv,
                                            "timeout_s": timeout_s}, expect=(201,))["id"]


def ended(d, sid, timeout=180):
    return d.wait(lambda: (s := d.session(sid))["state"] == "ended" and s, timeout,
                  f"session {sid} to end")


def check_seq(events, first):
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(first, first + len(seqs))), f"seq not {first}, {first}+1, ...: {seqs}"


def case_resume_stored(d, sid):
    full = raw_lines(d, sid)
    check_seq(full, 1)
    assert all(e["type"] != "heartbeat" for e in full), "heartbeat in a stream that is not followed"
    mid = full[len(full) // 2]["seq"]
    tail = raw_lines(d, sid, after=mid)
    assert tail == full[mid:], (mid, tail[:2], full[mid:mid + 2])
    assert raw_lines(d, sid, after=full[-1]["seq"]) == [], "after= the last seq is not empty"
    assert raw_lines(d, sid, after=full[-1]["seq"], follow=True) == [], \
        "a follow after the end of an ended session did not end at once"
    status, _, body = d.request("GET", f"/v1/sessions/{sid}/events?after=x")
    assert status == 400, (status, body)
    print(f"resume (stored) ok: {len(full)} events, after={mid} gave the {len(tail)} after it")
    return len(full)


def case_resume_follow(d):
    """A follow cut after "tick 3", reopened with after= the last seq it read."""
    sid = task(d, ["sh", "-c", TICKER])
    conn, r = open_events(d, sid, 0, True)
    first = []
    for line in iter(r.readline, b""):
        e = json.loads(line)
        if e["type"] == "heartbeat":
            continue
        first.append(e)
        if e["type"] == "exec.stdout" and "tick 3" in e.get("data", ""):
            break
    conn.close()  # the client goes away mid-stream
    cut = first[-1]["seq"]
    rest = [e for e in raw_lines(d, sid, after=cut, follow=True) if e["type"] != "heartbeat"]
    got = first + rest
    check_seq(got, 1)
    assert got == raw_lines(d, sid), "the resumed follow differs from the stored stream"
    assert got[-1]["type"] == "session.state" and got[-1]["state"] == "ended", got[-1]
    out = "".join(e.get("data", "") for e in got if e["type"] == "exec.stdout")
    assert out == "".join(f"tick {i}\n" for i in range(1, 13)), out
    print(f"resume (follow) ok: cut at seq {cut} of {len(got)}, every event once, in order")
    return sid


def case_heartbeat(d):
    """A live session with nothing to say: heartbeats only, then its events again."""
    sid = d.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": 300},
                 expect=(201,))["id"]
    d.wait_state(sid, "running")
    last = d.session(sid)["last_seq"]
    conn, r = open_events(d, sid, last, True, timeout=HEARTBEAT_S * 6)
    t0 = time.time()
    try:
        beat = json.loads(r.readline())
        waited = time.time() - t0
        assert beat["type"] == "heartbeat" and "seq" not in beat and beat.get("ts"), beat
        # the lower bound is exact; the upper one only catches "never" (socket timeout)
        assert waited >= HEARTBEAT_S - 1, f"heartbeat after {waited:.1f} s of quiet"
        d.post(f"/v1/sessions/{sid}/exec", {"argv": ["echo", "after the beat"]})
        seen = []
        while not any(e.get("data") == "after the beat\n" for e in seen):
            e = json.loads(r.readline())
            seen += [e] if e["type"] != "heartbeat" else []
        assert seen[0]["seq"] == last + 1, (last, seen[0])
    except socket.timeout:
        raise AssertionError(f"no heartbeat within {HEARTBEAT_S * 6} s of quiet")
    finally:
        conn.close()
    d.call("DELETE", f"/v1/sessions/{sid}")
    ended(d, sid)
    print(f"heartbeat ok: first after {waited:.1f} s of quiet (every {HEARTBEAT_S} s), then "
          f"the session's events (seq {last + 1}..) on the same stream")
    return sid


def age_sessions(state, ids, hours):
    """What an hour passing would do to the stopped daemon's records."""
    db = sqlite3.connect(os.path.join(state, "state", "stockade.db"))
    shift = int(hours * 3600e6)
    with db:
        for sid in ids:
            n = db.execute("UPDATE sessions SET ended_usec = ended_usec - ?, stopped_usec = "
                           "stopped_usec - ?, started_usec = started_usec - ?, created_usec = "
                           "created_usec - ? WHERE id = ? AND state = 'ended'",
                           (shift,) * 4 + (sid,)).rowcount
            assert n == 1, f"{sid} is not an ended session"
    db.close()


def case_retention(d, old, young):
    folder = lambda sid: os.path.join(d.state, "state", "artifacts", sid)  # noqa: E731
    # the first pass runs 10 s after start (RETENTION_FIRST_RUN_USEC), the next 10 min later
    d.wait(lambda: all(d.request("GET", f"/v1/sessions/{s}")[0] == 404 for s in old), 60,
           "retention to remove the sessions that ended over an hour ago")
    for sid in old:
        assert not os.path.exists(folder(sid)), f"{folder(sid)} is still there"
        status, _, _ = d.request("GET", f"/v1/sessions/{sid}/events")
        assert status == 404, f"events of {sid}: {status}"
    for sid in young:
        assert d.session(sid)["state"] == "ended", sid
        assert os.path.isdir(folder(sid)), f"{folder(sid)} was removed"
        assert raw_lines(d, sid), f"events of {sid} were removed"
    print(f"retention ok: {len(old)} sessions over artifact_max_age_h = 1 removed (folder, "
          f"record, events), {len(young)} younger kept")


def main():
    with Daemon(pools=MINIMAL, keep_state=True) as d:
        d.wait_ready()
        stored = task(d, ["sh", "-c", "for i in 1 2 3 4 5 6; do echo $i > f$i; echo $i; done"])
        ended(d, stored)
        case_resume_stored(d, stored)
        followed = case_resume_follow(d)
        ended(d, followed)
        quiet = case_heartbeat(d)
    state, prefix = d.state, d.prefix
    try:
        age_sessions(state, [stored, followed], hours=2)
        conf = "[sessions]\nartifact_max_age_h = 1\n"
        with Daemon(pools=MINIMAL, state_dir=state, prefix=prefix, extra_conf=conf) as d2:
            case_retention(d2, old=[stored, followed], young=[quiet])
    finally:
        shutil.rmtree(state, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
