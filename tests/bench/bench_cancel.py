#!/usr/bin/env python3
"""Benchmark of cancellation and streaming through a real stockaded (issue 4). Prints
figures, never passes or fails on time. The last line is one JSON object.

For N cancels of a running python task that writes a file and a line every 0.2 s:
  cancel -> quiet:     the cancel request sent -> the session's "stopping, cancelled" event
                       (after which nothing from the guest is accepted)
  cancel -> QEMU gone: the cancel's own event ("stopping, cancelled") -> the guest.destroyed
                       event (QEMU gone), both stamped by the daemon; the daemon's destroy_ms
                       (destroy requested -> QEMU gone) is shown beside it
  cancel -> artifacts: ... -> the artifacts event (salvage done, files on disk)
and stdout throughput to a follower: a task writes 64 MiB to stdout, a follower reads the
event stream; MB/s of payload from the first to the last byte.

    tests/bench/run cancel [--cancels N] [--quick]
"""
import argparse
import datetime
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon  # noqa: E402

WRITER = r"""
import time, pathlib
pathlib.Path("out").mkdir()
for i in range(1, 100000):
    pathlib.Path(f"out/f{i:05}.txt").write_text(f"{i}\n" * 50)
    print(f"tick {i}", flush=True)
    time.sleep(0.2)
"""

FLOOD = r"""
import sys
chunk = ("x" * 1023 + "\n").encode()
out = sys.stdout.buffer
for _ in range(%d):
    out.write(chunk * 64)
out.flush()
"""


def ts(event):
    return datetime.datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))] if v else 0.0


def one_cancel(d):
    sid = d.call("POST", "/v1/tasks", body={"pool": "python", "argv": ["python3", "w.py"],
                                           "timeout_s": 600,
                                           "files": [{"path": "w.py", "content": WRITER}]},
                 expect=(201,))["id"]
    for ev in d.events(sid, follow=True):
        if ev["type"] == "exec.stdout" and "tick 5" in ev.get("data", ""):
            break
    t_cancel = time.time()
    d.post(f"/v1/sessions/{sid}/cancel")
    events = list(d.events(sid, follow=True))
    stop = next(e for e in events if e["type"] == "session.state" and
                e.get("reason") == "cancelled")
    gone = next(e for e in events if e["type"] == "guest.destroyed")
    art = next(e for e in events if e["type"] == "artifacts")
    quiet_ms = (ts(stop) - t_cancel) * 1000  # event times are whole ms: may read -0.x
    return {"quiet_ms": max(quiet_ms, 0.0),
            "gone_ms": (ts(gone) - ts(stop)) * 1000,  # one clock, no clamp: never negative
            "destroy_ms": gone["destroy_ms"],
            "artifacts_s": ts(art) - t_cancel,
            "files": art["files"], "via": art.get("via", "salvage")}


def throughput(d, mib):
    sid = d.call("POST", "/v1/tasks", body={"pool": "python", "argv": ["python3", "f.py"],
                                           "timeout_s": 600,
                                           "files": [{"path": "f.py",
                                                      "content": FLOOD % (mib * 16)}]},
                 expect=(201,))["id"]
    got, first, last = 0, None, None
    for ev in d.events(sid, follow=True):
        if ev["type"] == "exec.stdout":
            now = time.time()
            first = first or now
            last = now
            got += len(ev["data"])
    secs = (last - first) if first and last and last > first else float("nan")
    return got, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cancels", type=int, default=10)
    ap.add_argument("--flood-mib", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="3 cancels, 8 MiB flood (smoke run)")
    a = ap.parse_args()
    if a.quick:
        a.cancels, a.flood_mib = 3, 8
    conf = "[sessions]\noutput_limit_mib = %d\n" % (a.flood_mib * 2 + 16)
    with Daemon(pools={"python": dict(warm=1, slots=3, memory_mib=384)}, extra_conf=conf) as d:
        d.wait_ready()
        runs = []
        for i in range(a.cancels):
            d.wait(d.pool_full, 300, "a full pool")
            r = one_cancel(d)
            runs.append(r)
            print(f"cancel {i + 1}: quiet {r['quiet_ms']:.1f} ms, QEMU gone {r['gone_ms']:.1f} ms"
                  f" (destroy {r['destroy_ms']} ms), artifacts {r['artifacts_s']:.2f} s "
                  f"({r['files']} files)", flush=True)
        d.wait(d.pool_full, 300, "a full pool")
        got, secs = throughput(d, a.flood_mib)
        mbps = got / secs / 1e6 if secs == secs else 0.0
        pool = d.get("/v1/pool")
    q = [r["quiet_ms"] for r in runs]
    g = [r["gone_ms"] for r in runs]
    s = [r["artifacts_s"] for r in runs]
    print(f"accel: {pool['accel']}")
    print(f"cancel -> quiet: p50 {pct(q, .5):.1f} ms, p99 {pct(q, .99):.1f} ms")
    print(f"cancel -> QEMU gone: p50 {pct(g, .5):.1f} ms, p99 {pct(g, .99):.1f} ms")
    print(f"cancel -> artifacts on disk: p50 {pct(s, .5):.2f} s, p99 {pct(s, .99):.2f} s "
          f"(goal here <= 5 s)")
    print(f"stdout to a follower: {got / 1e6:.1f} MB in {secs:.2f} s = {mbps:.2f} MB/s")
    print(json.dumps({"accel": pool["accel"], "cancels": len(runs),
                      "cancel_to_quiet_ms": round(pct(q, .5), 1),
                      "cancel_to_quiet_p99_ms": round(pct(q, .99), 1),
                      "cancel_to_qemu_gone_p50_ms": round(pct(g, .5), 1),
                      "cancel_to_qemu_gone_p99_ms": round(pct(g, .99), 1),
                      "cancel_to_artifacts_p50_s": round(pct(s, .5), 2),
                      "cancel_to_artifacts_p99_s": round(pct(s, .99), 2),
                      "stdout_mb_per_s": round(mbps, 2)}))


if __name__ == "__main__":
    main()
