#!/usr/bin/env python3
"""Soak/load benchmark (issue 8) against a real stockaded. Prints a report, never passes or
fails on time; it exits 1 when a ledger is wrong or a clean stop left something behind
(its smoke run under ctest fails on those too). The last line is one JSON object.

N client threads, one tenant each (its own token and quota: 2 concurrent sessions), create
tasks back to back for M minutes; each task runs a short python or shell job; some are
cancelled at a random moment, some get a timeout shorter than their job. Reported:
  sessions/min completed (ended `completed`; every end is counted too); hand-out p50/p99 under load (created -> running, from the events);
  end reasons; refusals (429s are expected when a tenant is at its concurrency limit);
  daemon RSS and open fds sampled every 5 s (first, max, last: flat is good);
  each tenant's ledger once everything ended (no open reservation, and charged + released
  equals the sessions it created: every one settled exactly once);
  after a clean stop: leaked domains (libvirt) and leaked files (work areas, temp files).

    tests/bench/run soak [--clients N] [--minutes M] [--quick]
"""
import argparse
import collections
import datetime
import json
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon, HttpError  # noqa: E402

JOBS = [
    ["python3", "-c", "import csv,io,sys; print(sum(1 for _ in csv.reader(io.StringIO('a,b\\n'*5000))))"],
    ["sh", "-c", "for i in 1 2 3; do echo step $i > s$i.txt; sleep 0.5; done"],
    ["sh", "-c", "sleep 20"],  # long: ends by cancel or timeout
]


def ts(e):
    return datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))] if v else 0.0


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.handout = []
        self.reasons = collections.Counter()
        self.errors = collections.Counter()
        self.created = collections.Counter()  # per tenant id: 201 answers
        self.ended = 0


def client(d, tenant, rng, deadline, stats):
    token = tenant["token"]
    while time.time() < deadline:
        job = rng.choice(JOBS)
        timeout = 5 if rng.random() < 0.2 else 60
        try:
            sid = d.call("POST", "/v1/tasks", body={"pool": "python", "argv": job,
                                                   "timeout_s": timeout},
                         expect=(201,), token=token)["id"]
        except HttpError as e:
            with stats.lock:
                stats.errors[e.status] += 1
            time.sleep(0.5)
            continue
        with stats.lock:
            stats.created[tenant["id"]] += 1
        if rng.random() < 0.25:
            time.sleep(rng.uniform(0.5, 4))
            try:
                d.call("POST", f"/v1/sessions/{sid}/cancel", token=token)
            except HttpError:
                pass
        events = list(d.events(sid, follow=True, token=token))
        created = next((ts(e) for e in events if e["type"] == "session.created"), None)
        running = next((ts(e) for e in events if e["type"] == "session.state"
                        and e["state"] == "running"), None)
        final = [e for e in events if e["type"] == "session.state" and e.get("reason")]
        with stats.lock:
            if created and running:
                stats.handout.append((running - created) * 1000)
            stats.reasons[final[-1]["reason"] if final else "?"] += 1
            stats.ended += 1


def sample(pid):
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return rss / 1024, len(os.listdir(f"/proc/{pid}/fd"))


def new_tenant(d, i):
    t = d.unix_call("POST", "/v1/admin/tenants", {"name": f"soak-{i}"})
    d.unix_call("PUT", f"/v1/admin/tenants/{t['id']}/quota", {"max_sessions": 2})
    return t


def ledger_problems(usage, tenants, created):
    """Every reservation settled exactly once: none open, nothing reserved, and charged +
    released equals the sessions the tenant created (created: tenant id -> 201 answers;
    usage: tenant id -> its /usage answer)."""
    problems = []
    for t in tenants:
        u = usage(t["id"])
        r = u["reservations"]
        if r["open"] != 0 or u["sessions"]["open"] != 0 or u["wallet_guest_seconds"]["reserved"]:
            problems.append(f"{t['name']}: still open: {u}")
        if r["charged"] + r["released"] != created[t["id"]]:
            problems.append(f"{t['name']}: {r['charged']} charged + {r['released']} released "
                            f"!= {created[t['id']]} created")
    return problems


def leaked_files(state):
    leaks = []
    for dp, dn, fn in os.walk(os.path.join(state, "state")):
        for n in dn + fn:
            if n in (".mirror", ".salvage") or n.endswith(".tmp"):
                leaks.append(os.path.join(dp, n))
    return leaks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--quick", action="store_true", help="2 clients, 1 minute (smoke run)")
    a = ap.parse_args()
    if a.quick:
        a.clients, a.minutes = 2, 1
    stats, samples = Stats(), []
    d = Daemon(pools={"python": dict(warm=2, slots=4, memory_mib=384)}, keep_state=True)
    with d:
        d.wait_ready()
        pid = d.proc.pid
        deadline = time.time() + a.minutes * 60
        tenants = [new_tenant(d, i) for i in range(a.clients)]
        threads = [threading.Thread(target=client,
                                    args=(d, tenants[i], random.Random(i), deadline, stats))
                   for i in range(a.clients)]
        t0 = time.time()
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            samples.append((time.time() - t0,) + sample(pid))
            time.sleep(5)
        for t in threads:
            t.join()
        elapsed = time.time() - t0
        samples.append((elapsed,) + sample(pid))
        ledger = ledger_problems(
            lambda tid: d.unix_call("GET", f"/v1/admin/tenants/{tid}/usage"), tenants,
            stats.created)
    domains = d.leftover_domains()
    files = leaked_files(d.state)
    subprocess.run(["rm", "-rf", d.state])
    rss = [s[1] for s in samples]
    fds = [s[2] for s in samples]
    completed = stats.reasons["completed"]
    per_min = completed / (elapsed / 60)
    print(f"{a.clients} clients for {elapsed / 60:.1f} min: {sum(stats.created.values())} "
          f"created, {stats.ended} ended, {completed} completed ({per_min:.1f}/min); "
          f"refusals {dict(stats.errors)}")
    print(f"end reasons: {dict(stats.reasons)}")
    print(f"hand-out under load (created -> running): p50 {pct(stats.handout, .5):.0f} ms, "
          f"p99 {pct(stats.handout, .99):.0f} ms")
    print(f"daemon RSS MiB: first {rss[0]:.1f}, max {max(rss):.1f}, last {rss[-1]:.1f}; "
          f"fds: first {fds[0]}, max {max(fds)}, last {fds[-1]}")
    print(f"ledger: {'every reservation settled' if not ledger else ledger}")
    print(f"after a clean stop: {len(domains)} leaked domains, {len(files)} leaked files")
    for f in domains + files:
        print(f"  leaked: {f}")
    print(json.dumps({"clients": a.clients, "minutes": round(elapsed / 60, 2),
                      "sessions": stats.ended, "completed": completed,
                      "sessions_per_min": round(per_min, 1),
                      "handout_p50_ms": round(pct(stats.handout, .5)),
                      "handout_p99_ms": round(pct(stats.handout, .99)),
                      "rss_first_mib": round(rss[0], 1), "rss_max_mib": round(max(rss), 1),
                      "rss_last_mib": round(rss[-1], 1), "fds_first": fds[0],
                      "fds_max": max(fds), "fds_last": fds[-1],
                      "leaked_domains": len(domains), "leaked_files": len(files),
                      "ledger_problems": len(ledger),
                      "end_reasons": dict(stats.reasons)}))
    return 1 if ledger or domains or files else 0


if __name__ == "__main__":
    sys.exit(main())
