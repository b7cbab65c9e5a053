"""Cluster mode (issue 16): a host that dies. Three real stockaded share one throw-away
PostgreSQL (tests/lib/pgtemp.py), with a short lease ([cluster] lease_s = LEASE_S).

    test_cluster_lost.py

A long task (`sleep 600`) runs on host b; a HEAD of it through a and c answers b's
status, type and length with no body. b's daemon is killed with SIGKILL (its QEMU
guests keep running). Through host a, `stockade hosts` must show b lost, and the cluster's
index must say the session ended host_lost. Detection is held to its promise (hostd/cluster/
README.md: within the lease and the takeover's next round, every second) on the database's
own clock and log, not on the test's timing: every statement the hosts run is logged by the
server with its start time, so b must be taken over by the first takeover round a host that
may take over (its own heartbeat fresh for a lease) ran after b's lease ran out, and each
live host must have looked for a lost host twice per heartbeat (a 1 s cadence against the
2 s heartbeat; looking once per heartbeat, as before stop 25, fails). Exactly one of a and c
took over (lost_by, and one log line between them), and
`stockade doctor` through a says b is lost, by whom, past the cluster's 6 s lease (and
`stockade hosts` shows "lost by" the taker). The
ledger: b's reservation ended once, charged to b's last heartbeat (the database's stamp),
not to now. Then b is started again on its own state: the QEMU guests it left are gone
(its start destroys guests of its domain prefix), its own record of the session ends
host_lost, it serves again (a new task completes on it, admitted through the cluster),
`stockade hosts` shows it live, and the first reservation is exactly as the takeover left
it. Last, b is frozen (SIGSTOP) past its lease while a task runs, as if cut off from the
database: it is taken over the same way; thawed, its heartbeat is refused, it ends its own
record host_lost (the ledger untouched) and rejoins. Then PostgreSQL is stopped for longer
than the lease and started again: no host is taken over. Stopped again, a task cancelled
meanwhile still ends (creates answer 503) and its reservation is settled by itself, once,
when the database is back. Standard library only."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stockade_fixture import qemu_guests  # noqa: E402
from test_cluster import run_scenario, start_together, stockade_hosts  # noqa: E402

LEASE_S = 6
LOST_WAIT_S = LEASE_S + 60  # "never": past this the takeover is broken, not slow
USEC = 1_000_000
TAKEOVER_SQL = "FOR UPDATE OF h SKIP LOCKED"  # cluster_takeover.c's pick
HEARTBEAT_SQL = "UPDATE hosts SET alive_since_usec"  # cluster_heartbeat()


def log_statements(pg):
    """Every statement the hosts run is logged with its start (the database's clock, epoch
    ms) and its backend; kept across the server's restarts (ALTER SYSTEM)."""
    for sql in ("ALTER SYSTEM SET log_statement = 'all'",
                "ALTER SYSTEM SET log_line_prefix = '%n [%p] '", "SELECT pg_reload_conf()"):
        pg.psql(sql)


def statements(pg):
    """[(start usec, host id, 'takeover' | 'heartbeat')] from the server's log, in order: a
    statement line with its parameters' line after it ($1 is the host's id in both)."""
    out, pending = [], {}
    with open(os.path.join(pg.data, "server.log"), errors="replace") as f:
        for line in f:
            parts = line.split(" ", 2)
            if len(parts) < 3 or not parts[1].startswith("["):
                continue
            t, pid, rest = parts
            if "execute" in rest and (TAKEOVER_SQL in rest or HEARTBEAT_SQL in rest):
                kind = "takeover" if TAKEOVER_SQL in rest else "heartbeat"
                pending[pid] = (int(float(t) * 1000) * 1000, kind)
            elif "DETAIL:  parameters: $1 = '" in rest and pid in pending:
                host = rest.split("$1 = '", 1)[1].split("'", 1)[0]
                t_usec, kind = pending.pop(pid)
                out.append((t_usec, host, kind))
    return sorted(out)


def check_detection(pg, lost_host, takers):
    """lost_host was taken over by the first takeover round after its lease ran out, by the
    database's clock: the first look, by a host that may take over then, started after the
    lease ran out took it (its transaction stamped lost_usec before that host looked again);
    and each taker looked twice per heartbeat meanwhile (the 1 s cadence). Returns
    (seconds from the last heartbeat to lost, the takers' looks per heartbeat)."""
    hb, lost = (int(x) for x in pg.psql(
        f"SELECT heartbeat_usec, lost_usec FROM hosts WHERE id = '{lost_host}'")[0])
    alive = dict((h, int(t)) for h, t in pg.psql("SELECT id, alive_since_usec FROM hosts"))
    expiry = hb + LEASE_S * USEC
    st = statements(pg)
    looks = [(t, h) for t, h, k in st if k == "takeover" and h in takers and t >= expiry and
             alive[h] <= t - LEASE_S * USEC]  # may take over: live for a whole lease
    assert looks, f"no takeover look after {lost_host}'s lease ran out: {st[-20:]}"
    first_t, first_h = looks[0]
    again = [t for t, h in looks if h == first_h and t > first_t]
    assert expiry <= lost and first_t <= lost and (not again or lost <= again[0]), \
        (f"{lost_host}: lease out at {expiry}, first look after it by {first_h} at {first_t}, "
         f"its next at {again[:1]}, lost stamped at {lost}")
    per_beat = {}
    for h in takers:
        window = [(t, k) for t, hh, k in st if hh == h and hb <= t <= lost]
        beats = [t for t, k in window if k == "heartbeat"]
        looks_h = sum(k == "takeover" for _, k in window)
        # A host's tick (1 s) writes its heartbeat on every second tick and then looks, on
        # every tick: between two of its heartbeats come two looks (its own tick's and the
        # next one's). Judged per pair of heartbeats, not by totals over the window, whose
        # edges may cut a tick between its heartbeat and its look (a total of 2 n - 1 looks
        # for n heartbeats failed, 6 in 4, on a fresh-clone CI run with the cadence intact).
        # A look per heartbeat, as before stop 25, makes one per pair.
        short = [(a, b) for a, b in zip(beats, beats[1:])
                 if sum(k == "takeover" and a <= t < b for t, k in window) < 2]
        assert len(beats) >= 2 and not short, \
            (f"{h} looked for a lost host {looks_h} times in {len(beats)} heartbeats, once or "
             f"never between heartbeats at {short[:3]}: not every second")
        per_beat[h] = round(looks_h / len(beats), 2)
    return (lost - hb) / USEC, per_beat


def host_row(via, host_id):
    return next((h for h in stockade_hosts(via) if h["id"] == host_id), None)


def ledger_row(pg, sid):
    rows = pg.psql("SELECT r.state, r.charged_guest_s, r.reserved_guest_s, r.vcpus,"
                   " r.created_usec, r.ended_usec, s.state, s.end_reason, s.ended_usec"
                   f" FROM reservations r JOIN sessions s ON s.id = r.session_id"
                   f" WHERE r.session_id = '{sid}'")
    assert len(rows) == 1, rows
    return rows[0]


def run_long_task(b):
    sid = b.call("POST", "/v1/tasks", body={"pool": "minimal", "argv": ["sleep", "600"],
                                            "timeout_s": 900}, expect=(201,))["id"]
    b.wait_state(sid, "running", 600)
    return sid


def check_head(hosts, sid):
    """A HEAD through a forwarding host answers what the owner (b) answers it: its status,
    Content-Type and Content-Length (the GET's), and no body; a chunked answer (events
    follow) has no length and ends at once."""
    a, b = hosts["a"], hosts["b"]
    path = f"/v1/sessions/{sid}"
    _, _, body = b.request("GET", path)
    for name in ("b", "a", "c"):
        status, headers, got = hosts[name].request("HEAD", path)
        h = {k.lower(): v for k, v in headers}
        seen = (status, h.get("content-type"), h.get("content-length"))
        assert got == b"" and seen == (200, "application/json", str(len(body))), (name, seen)
    # a follow held open would run into the client's timeout (its heartbeats come every
    # 15 s): answered and closed, with no body, is what "ends at once" means here
    status, headers, got = a.request("HEAD", f"{path}/events?follow=1", timeout=10)
    h = {k.lower(): v for k, v in headers}
    assert status == 200 and got == b"" and "content-length" not in h, (status, h)
    assert h.get("connection") == "close", h


def wait_lost(a, pg, sid, t_kill):
    """Seconds from the kill until a's hosts list says host-b lost (a figure: the promise is
    checked by check_detection on the database's clock); fails only past LOST_WAIT_S."""
    bound = LOST_WAIT_S
    last = None
    while time.time() - t_kill <= bound:
        last = host_row(a, "host-b")
        if last and last.get("state") == "lost":
            return time.time() - t_kill, last
        time.sleep(0.2)
    raise AssertionError(f"host-b not lost {bound} s after the kill: {last}; index "
                         f"{pg.psql('SELECT id, state, end_reason FROM sessions')}")


def check_takeover(pg, hosts, sid, last_hb):
    """The index, the ledger and exactly one taker."""
    r_state, charged, reserved, vcpus, created, ended, s_state, reason, s_ended = \
        ledger_row(pg, sid)
    assert (s_state, reason) == ("ended", "host_lost"), (s_state, reason)
    assert r_state == "charged", r_state
    assert int(ended) == last_hb and int(s_ended) == last_hb, (ended, s_ended, last_hb)
    lived_s = max(0, -(-(last_hb - int(created)) // USEC))  # admit_charge_guest_s's rule
    want = min(int(reserved), int(vcpus) * lived_s)
    assert want > 0 and int(charged) == want, f"charged {charged}, to the last heartbeat {want}"
    now_s = -(-(int(time.time() * USEC) - int(created)) // USEC)
    assert int(charged) < int(vcpus) * now_s, "charged to now, not to the last heartbeat"
    lost_by = pg.psql("SELECT lost_by FROM hosts WHERE id = 'host-b' AND lost_usec > 0")
    assert lost_by in ([["host-a"]], [["host-c"]]), lost_by
    lines = [line for h in ("a", "c") for line in hosts[h].tail_log(100000).splitlines()
             if "host host-b lost" in line]
    assert len(lines) == 1, f"takeover log lines of a and c: {lines}"
    return int(charged), lost_by[0][0]


def check_doctor(a, taker):
    """`stockade doctor --json` through a live host names b lost, its taker, and judges by
    the cluster's lease (LEASE_S, not doctor's 10 s default); `stockade hosts` names the
    taker in b's row. Seconds doctor took."""
    t0 = time.time()
    r = subprocess.run([os.path.join(a.build, "tools", "stockade"), "--socket", a.socket_path,
                        "--json", "doctor"], capture_output=True, text=True, timeout=120)
    took = time.time() - t0
    checks = {c["check"]: c for c in json.loads(r.stdout)}
    c = checks.get("cluster")
    assert c and c["level"] == "WARN", (c, r.stderr)
    assert f"1 of 3 hosts lost (silent past the {LEASE_S} s lease): host-b (taken over by" \
        f" {taker} at " in c["message"], c
    assert "start stockaded on the lost host" in c["fix"], c
    table = subprocess.run([os.path.join(a.build, "tools", "stockade"), "--socket",
                            a.socket_path, "hosts"], capture_output=True, text=True,
                           timeout=60).stdout
    row = next((x for x in table.splitlines() if x.startswith("host-b ")), "")
    assert f" lost by {taker} " in row, table
    return took


def check_return(pg, hosts, sid, old_pids, before):
    """b started again: its old guests destroyed, its record ended host_lost, it serves."""
    a, b = hosts["a"], hosts["b"]
    b.start()
    b.wait(lambda: not (old_pids & set(qemu_guests(b.prefix))), 120, "b's old guests destroyed")
    s = b.wait(lambda: (x := b.session(sid))["state"] == "ended" and x, 300,
               "b's own record of the taken-over session to end")
    assert s["end_reason"] == "host_lost", s
    b.wait(lambda: (host_row(a, "host-b") or {}).get("state") == "live", 30,
           "host-b live again in a's hosts list")
    b.wait(b.pool_full, 600, "b's pool refilled")
    done = b.call("POST", "/v1/tasks", body={"pool": "minimal", "argv": ["true"],
                                             "timeout_s": 120}, expect=(201,))["id"]
    b.wait_state(done, "ended", 300)
    assert pg.psql(f"SELECT host_id, state FROM sessions WHERE id = '{done}'") == \
        [["host-b", "ended"]], "b's new session is not in the cluster's index"
    after = ledger_row(pg, sid)
    assert after == before, f"b's return changed the ledger: {before} -> {after}"
    n = pg.psql(f"SELECT count(*) FROM reservations WHERE session_id = '{sid}'")
    assert n == [["1"]], n


def check_partition(pg, hosts):
    """b frozen (SIGSTOP) past its lease, as if cut off from the database: taken over while
    its guest runs on. Thawed, its next heartbeat is refused (lost): it ends its session
    host_lost without touching the ledger again, and is live again. Seconds to lost."""
    a, b = hosts["a"], hosts["b"]
    b.wait(b.pool_full, 600, "b's pool refilled")
    sid = run_long_task(b)
    b.proc.send_signal(signal.SIGSTOP)
    t_stop = time.time()
    try:
        took, _ = wait_lost(a, pg, sid, t_stop)
        detected, _ = check_detection(pg, "host-b", ["host-a", "host-c"])
    finally:
        b.proc.send_signal(signal.SIGCONT)
    taken = ledger_row(pg, sid)
    assert taken[0] == "charged" and taken[6:8] == ["ended", "host_lost"], taken
    s = b.wait(lambda: (x := b.session(sid))["state"] == "ended" and x, 300,
               "b's own record, once thawed, to end")
    assert s["end_reason"] == "host_lost", s
    assert "was declared lost" in b.tail_log(200), "b did not learn it was lost"
    b.wait(lambda: (host_row(a, "host-b") or {}).get("state") == "live", 30,
           "host-b live again after the thaw")
    assert ledger_row(pg, sid) == taken, "b's own end touched the ledger again"
    return took, detected


def all_beating(via):
    """Every host's heartbeat fresh in via's hosts list; False while via's database
    connection is not back yet (the list answers 503)."""
    try:
        return all(h["heartbeat_age_ms"] < 3000 for h in stockade_hosts(via))
    except AssertionError:
        return False


def every_host_looked(pg, host_ids, since_usec):
    """Whether each host has looked for a lost host, after since_usec (the database's clock),
    at a moment it could have taken one over (live for a whole lease): then any takeover that
    was going to happen has."""
    alive = dict((h, int(t)) for h, t in pg.psql("SELECT id, alive_since_usec FROM hosts"))
    looks = [(t, h) for t, h, k in statements(pg) if k == "takeover" and t >= since_usec]
    return all(any(h == host and alive[host] <= t - LEASE_S * USEC for t, h in looks)
               for host in host_ids)


def check_db_away(pg, hosts):
    """PostgreSQL away for longer than the lease: every heartbeat goes stale at once, yet
    when it is back no host is taken over (only a host that has beaten for a whole lease
    since may take over, and by then the live ones have beaten again)."""
    a, b = hosts["a"], hosts["b"]
    b.wait(b.pool_full, 600, "b's pool refilled")
    sid = run_long_task(b)
    lost_before = sum("lost (last heartbeat" in hosts[h].tail_log(100000) for h in hosts)
    pg.stop_server()
    time.sleep(LEASE_S + 4)
    pg.restart_server(start_only=True)
    back = int(pg.psql("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint")[0][0])
    b.wait(lambda: all_beating(a), 30, "every host beating again", step=0.5)
    b.wait(lambda: every_host_looked(pg, ["host-a", "host-b", "host-c"], back), LOST_WAIT_S,
           "every host to look for a lost host while it could take one over", step=0.5)
    assert all(h["state"] == "live" for h in stockade_hosts(a)), stockade_hosts(a)
    assert ledger_row(pg, sid)[0] == "open", "a session was ended while the database was away"
    assert b.session(sid)["state"] == "running", b.session(sid)
    lost_after = sum("lost (last heartbeat" in hosts[h].tail_log(100000) for h in hosts)
    assert lost_after == lost_before, "a host was taken over after the database came back"
    return sid


def check_db_away_end(pg, hosts, sid):
    """A session that ends while PostgreSQL is away: it ends on its host all the same (the
    guest destroyed, its record ended), creates answer 503 meanwhile, and once the database
    is back its reservation is settled by itself within a few heartbeats, exactly once,
    charged from the record (at most what it reserved)."""
    a, b = hosts["a"], hosts["b"]
    pg.stop_server()
    b.post(f"/v1/sessions/{sid}/cancel")
    b.wait_state(sid, "ended", 300)
    for d in (a, b):
        st, _, body = d.request("POST", "/v1/sessions", {"pool": "minimal", "timeout_s": 60})
        assert st == 503, (st, body)
    assert f"session {sid}: ledger:" in b.tail_log(400), "the settlement did not meet the outage"
    pg.restart_server(start_only=True)
    t0 = time.time()
    b.wait(lambda: ledger_row(pg, sid)[0] != "open", 30, "the reservation settled", step=0.5)
    took = time.time() - t0
    state, charged, reserved, _, _, ended, idx, _, _ = ledger_row(pg, sid)
    assert state == "charged" and 0 < int(charged) <= int(reserved), ledger_row(pg, sid)
    assert int(ended) > 0 and idx == "ended", ledger_row(pg, sid)
    return took


def scenario_host_lost(pg, hosts):
    a, b = hosts["a"], hosts["b"]
    b.pools = {"minimal": dict(warm=1, slots=1)}  # only b runs a guest
    start_together(hosts)
    log_statements(pg)
    b.wait(b.pool_full, 600, "b's pool")
    sid = run_long_task(b)
    created = int(ledger_row(pg, sid)[4])
    # a few heartbeats while it runs: what is charged is then more than nothing
    b.wait(lambda: int(pg.psql("SELECT heartbeat_usec FROM hosts WHERE id = 'host-b'")[0][0])
           > created + 3 * USEC, 30, "b's heartbeats while the task runs", step=0.5)
    assert ledger_row(pg, sid)[0] == "open"
    check_head(hosts, sid)
    old_pids = set(qemu_guests(b.prefix))
    assert old_pids, "b runs no QEMU guest"
    b.proc.send_signal(signal.SIGKILL)
    t_kill = time.time()
    b.proc.wait()
    b.proc = None
    last_hb = int(pg.psql("SELECT heartbeat_usec FROM hosts WHERE id = 'host-b'")[0][0])
    took, row = wait_lost(a, pg, sid, t_kill)
    detected, per_beat = check_detection(pg, "host-b", ["host-a", "host-c"])
    assert row["sessions"] == 0, row
    charged, taker = check_takeover(pg, hosts, sid, last_hb)
    doctor_s = check_doctor(a, taker)
    assert old_pids & set(qemu_guests(b.prefix)), "b's guests died with its daemon: no check"
    before = ledger_row(pg, sid)
    check_return(pg, hosts, sid, old_pids, before)
    frozen, frozen_detected = check_partition(pg, hosts)
    sid_away = check_db_away(pg, hosts)
    settled = check_db_away_end(pg, hosts, sid_away)
    print(f"host_lost ok: lease {LEASE_S} s; host-b lost {detected:.2f} s after its last"
          f" heartbeat by the database's clock, by the first takeover round after the lease"
          f" (looks per heartbeat {per_beat}); in a's hosts list {took:.2f} s after the kill;"
          f" taken over by {taker} alone (stockade doctor through a says so in {doctor_s:.2f} s);"
          f" charged {charged} guest-s to b's last heartbeat; b back:"
          f" its {len(old_pids)} old QEMU guest(s) destroyed, its record ended host_lost, a new"
          f" task ran, the ledger unchanged; b frozen past its lease: lost"
          f" {frozen_detected:.2f} s after its last heartbeat ({frozen:.2f} s after the stop),"
          f" thawed it ended its session host_lost itself and rejoined, the ledger unchanged;"
          f" PostgreSQL away {LEASE_S + 4} s: nobody taken over; a task cancelled while it"
          f" was away ended, creates 503, its reservation settled {settled:.1f} s after the"
          f" database was back, once")


def main():
    return run_scenario(scenario_host_lost, warm=0, extra_conf=f"lease_s = {LEASE_S}\n")


if __name__ == "__main__":
    sys.exit(main())
