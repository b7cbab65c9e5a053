#!/usr/bin/env python3
"""A clean end hands its files over the channel (issue 13): real daemon, real guests.

    test_finalize.py clean closed cancel baseline big

clean:    a task writes files (one over the mirror budget, one in its last moment, plus a
          symlink and a FIFO) and exits at once: every regular file comes back byte for byte,
          the artifacts event says via=channel, the salvage counter does not move, nothing
          but files and directories lands in the folder.
closed:   a session closed by DELETE while its exec still runs ends via=channel too.
cancel:   a cancel still salvages what was written before the kill (via=salvage).
baseline: the same clean task with finalize_timeout_s = 0 (today's main: every end salvages);
          prints created -> ended next to clean's figure.
big:      (by hand, a figure) a task leaves 96 MiB the mirror does not hold (its budget is
          1 MiB here): the fetch rate over the channel beside finalize_ms_per_mib's allowance
          (100 ms a MiB, i.e. 10 MiB/s) and the finalize's ceiling (issue 25).
"""
import datetime
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon  # noqa: E402

POOLS = {"python": dict(warm=1, slots=2, memory_mib=384)}
CONF = "[sessions]\nmirror_budget_mib = 1\n"

CLEAN = r"""
import hashlib, json, os
os.makedirs("out/sub", exist_ok=True)
os.makedirs("emptydir", exist_ok=True)
files = {"out/big.bin": os.urandom(3 << 20),        # over the 1 MiB mirror budget: fetched
         "out/sub/mid.bin": os.urandom(300 << 10),  # more than one 256 KiB chunk
         "small.txt": b"small\n"}
for p, b in files.items():
    open(p, "wb").write(b)
os.symlink("/etc/passwd", "out/passwd-link")       # never listed, never written on the host
os.symlink("/etc", "etc-link")
os.mkfifo("fifo")
last = b"written in the last millisecond\n"
files["last.txt"] = last
print(json.dumps({p: hashlib.sha256(b).hexdigest() for p, b in files.items()}), flush=True)
open("last.txt", "wb").write(last)                 # and exit at once
"""


def ts(ev):
    return datetime.datetime.strptime(ev["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def metric(d, name, label=None):
    _, _, body = d.request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + (label or " ")):
            return float(line.split()[-1])
    raise AssertionError(f"metric {name}{label or ''} missing")


def salvages(d):
    return metric(d, "stockade_artifacts_total", '{via="salvage"}')


def run_clean_task(d):
    body = {"pool": "python", "argv": ["python3", "-c", CLEAN], "timeout_s": 120}
    sid = d.call("POST", "/v1/tasks", body=body, expect=(201,))["id"]
    events = list(d.events(sid, follow=True))
    assert events[-1]["type"] == "session.state" and events[-1]["state"] == "ended", events[-1]
    assert events[-1]["exit_code"] == 0, [e for e in events if e["type"] == "exec.stderr"]
    took = ts(events[-1]) - ts(events[0])
    out = "".join(e["data"] for e in events if e["type"] == "exec.stdout")
    return sid, events, json.loads(out), took


def check_folder(d, sid, want):
    root = os.path.join(d.state, "state", "artifacts", sid, "files")
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            assert not os.path.islink(p), f"symlink written: {p}"
            assert (os.lstat(p).st_mode & 0o170000) in (0o040000, 0o100000), f"not file/dir: {p}"
    for p, h in want.items():
        with open(os.path.join(root, p), "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        assert got == h, f"{p}: sha256 {got} != {h}"
    assert os.path.isdir(os.path.join(root, "emptydir")), "empty directory not kept"
    for p in ("fifo", "etc-link", "out/passwd-link"):
        assert not os.path.lexists(os.path.join(root, p)), f"{p} came back"
    left = [x for x in os.listdir(os.path.dirname(root)) if x != "files"]
    assert not left, f"work areas left behind: {left}"


def scenario_clean(d):
    before = salvages(d)
    sid, events, want, took = run_clean_task(d)
    art = next(e for e in events if e["type"] == "artifacts")
    assert art["via"] == "channel", art
    assert salvages(d) == before, "a clean end salvaged the disk"
    assert art["fetched_files"] >= 1, f"the file over the mirror budget was not fetched: {art}"
    check_folder(d, sid, want)
    print(f"clean ok: via=channel, {art['files']} files, {art['fetched_files']} fetched "
          f"({art['fetched_bytes']} bytes), finalize {art['finalize_ms']} ms; "
          f"created -> ended {took:.2f} s (finalize)")
    return took


def scenario_closed(d):
    before = salvages(d)
    sid = d.call("POST", "/v1/sessions", body={"pool": "python"}, expect=(201,))["id"]
    d.wait_state(sid, "running")
    d.call("POST", f"/v1/sessions/{sid}/exec",
           body={"argv": ["sh", "-c", "echo kept > kept.txt; echo up; sleep 1000"]})
    d.wait(lambda: any(e["type"] == "exec.stdout" for e in d.events(sid)), 120, "the exec")
    d.call("DELETE", f"/v1/sessions/{sid}")
    events = list(d.events(sid, follow=True))
    art = next(e for e in events if e["type"] == "artifacts")
    assert art["via"] == "channel", art
    assert events[-1]["state"] == "ended" and d.session(sid)["end_reason"] == "closed"
    assert any(e["type"] == "exec.exited" for e in events), "the killed exec's exit missing"
    assert salvages(d) == before
    status, _, body = d.request("GET", f"/v1/sessions/{sid}/files/kept.txt")
    assert status == 200 and body == b"kept\n", (status, body)
    print(f"closed ok: via=channel, finalize {art['finalize_ms']} ms")


def scenario_cancel(d):
    before = salvages(d)
    prog = ("import os, time\nfor i in range(1000):\n"
            "    open(f'part{i:03}', 'w').write(f'part {i}\\n' * 100); os.sync()\n"
            "    print(i, flush=True); time.sleep(0.25)\n")
    sid = d.call("POST", "/v1/tasks", expect=(201,), body={
        "pool": "python", "argv": ["python3", "-c", prog], "timeout_s": 300})["id"]
    last = -1
    for ev in d.events(sid, follow=True):
        if ev["type"] == "exec.stdout":
            last = max(int(x) for x in ev["data"].split())
        if last >= 5:
            break
    d.post(f"/v1/sessions/{sid}/cancel")
    events = list(d.events(sid, follow=True))
    art = next(e for e in events if e["type"] == "artifacts")
    assert art["via"] == "salvage" and "finalize_fallback" not in art, art
    assert salvages(d) == before + 1
    for i in range(last + 1):
        status, _, body = d.request("GET", f"/v1/sessions/{sid}/files/part{i:03}")
        assert status == 200 and body == f"part {i}\n".encode() * 100, (i, status)
    print(f"cancel ok: via=salvage, {last + 1} files written before the kill are back")


def run_baseline():
    with Daemon(pools=POOLS, extra_conf=CONF + "finalize_timeout_s = 0\n") as d:
        d.wait_ready()
        before = salvages(d)
        sid, events, want, took = run_clean_task(d)
        art = next(e for e in events if e["type"] == "artifacts")
        assert art["via"] == "salvage" and salvages(d) == before + 1, art
        print(f"baseline ok: via=salvage (finalize off, as main), salvage {art['salvage_ms']} "
              f"ms; created -> ended {took:.2f} s (salvage)")
        return took


BIG_MIB = 96  # of the fixture's 128 MiB workspace


def scenario_big(d):
    prog = ("import os\nfor i in range(2):\n"
            f"    open(f'big{{i}}.bin', 'wb').write(os.urandom({BIG_MIB // 2} << 20))\n")
    sid = d.call("POST", "/v1/tasks", expect=(201,), body={
        "pool": "python", "argv": ["python3", "-c", prog], "timeout_s": 600})["id"]
    events = list(d.events(sid, follow=True, timeout=900))
    art = next(e for e in events if e["type"] == "artifacts")
    assert art["via"] == "channel", art
    mib = art["fetched_bytes"] / (1 << 20)
    rate = mib / (art["finalize_ms"] / 1000.0)
    allowed_ms = 10000 + 100 * mib  # finalize_timeout_s + finalize_ms_per_mib, the defaults
    ceiling_ms = 10000 + 100 * (1 + 128)  # + the mirror budget left and the disk, at most
    print(f"big ok: {mib:.0f} MiB fetched over the channel in {art['finalize_ms']} ms "
          f"({rate:.1f} MiB/s; the allowance is 10 MiB/s): deadline {allowed_ms:.0f} ms, "
          f"ceiling {ceiling_ms} ms")


def run(names):
    figures = {}
    shared = [n for n in names if n != "baseline"]
    if shared:
        with Daemon(pools=POOLS, extra_conf=CONF) as d:
            d.wait_ready()
            for n in shared:
                print(f"== {n}", flush=True)
                r = globals()["scenario_" + n](d)
                if n == "clean":
                    figures["finalize"] = r
    if "baseline" in names:
        print("== baseline", flush=True)
        figures["salvage"] = run_baseline()
    if len(figures) == 2:
        print(f"created -> ended of a small clean task: {figures['salvage']:.2f} s with the "
              f"salvage (main), {figures['finalize']:.2f} s over the channel")


if __name__ == "__main__":
    known = ("clean", "closed", "cancel", "baseline", "big")
    names = known[:4] if sys.argv[1:] in ([], ["all"]) else tuple(sys.argv[1:])
    if any(n not in known for n in names):
        print(f"usage: {sys.argv[0]} [all | {' '.join(known)} ...]", file=sys.stderr)
        sys.exit(2)
    run(names)
    print("ok")
