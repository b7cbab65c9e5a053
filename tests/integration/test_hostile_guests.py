#!/usr/bin/env python3
"""Hostile guest programs (issue 8) through a real stockaded: a fork bomb, a memory hog, a
disk filler, endless stdout, a serial-console flood and garbage written to the guest's own
channel. Each runs as a task while a control session keeps printing; each may end only its
own session, the control session keeps answering throughout, and the daemon stays healthy.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon, wall  # noqa: E402

# A device program says "tried <device>" for each device it found before writing to it, so a
# glob that matches nothing (or a device missing from the image) fails the test instead of
# passing with nothing tried.
TRY = ('for d in {}; do [ -c "$d" ] || continue; echo "tried $d"; {} > "$d" && echo "wrote $d";'
       ' done; true')
CONSOLES = ["/dev/console", "/dev/ttyS0", "/dev/kmsg"]

PROGRAMS = [
    # (name, argv, acceptable end reasons, devices it must have tried: a list, or a pattern
    # at least one must match)
    ("fork bomb", ["sh", "-c", "f() { f | f & }; f; sleep 30"], {"timed_out", "completed"}, []),
    ("memory hog", ["python3", "-c",
                    "a = []\nwhile True: a.append(bytearray(32 << 20))"], {"completed"}, []),
    ("disk filler", ["sh", "-c", "dd if=/dev/zero of=fill bs=1M; echo full; sync"],
     {"completed"}, []),
    ("10 GiB of stdout", ["sh", "-c", "yes 0123456789abcdef0123456789abcdef | head -c 10737418240"],
     {"output_limit"}, []),
    ("console flood", ["sh", "-c", TRY.format(" ".join(CONSOLES), "head -c 50000000 /dev/zero")],
     {"completed"}, CONSOLES),
    ("channel garbage", ["sh", "-c", TRY.format("/dev/vport*", "head -c 1000000 /dev/urandom")],
     {"completed"}, r"/dev/vport\d+p\d+"),
]


# Each program's task timeout: 25 s, where the end reason does not depend on how fast the
# guest runs. The stdout flood must end by the output limit, not by its timeout: under TCG on
# a loaded machine 16 MiB took longer than 25 s (issue 31: it ended timed_out), so its
# timeout is far beyond the limit; the wait for the end below is the "never".
TIMEOUT_S = {"10 GiB of stdout": 200}


def check_tried(name, out, want):
    """The devices the program found and tried are the ones it had to try."""
    tried = re.findall(r"^tried (\S+)$", out, re.MULTILINE)
    if isinstance(want, str):
        assert tried and all(re.fullmatch(want, t) for t in tried), \
            f"{name}: tried {tried}, want at least one device matching {want}: {out!r}"
    else:
        assert tried == want, f"{name}: tried {tried}, want {want}: {out!r}"
    return tried


# The control session prints every 0.5 s. Its largest silence while a neighbour misbehaves
# may grow on a slow, shared host but must stay bounded: 60 periods. (Before this bound one
# line per 240 s window passed.) The figure is printed; speed itself belongs to tests/bench.
CONTROL_PERIOD_S = 0.5
CONTROL_GAP_MAX_S = 60 * CONTROL_PERIOD_S


def control_alive(d, sid, since_seq, since_s):
    """The control session printed all along since since_seq (its event at since_s): no
    silence, counted up to its next line, over CONTROL_GAP_MAX_S. A neighbour may end within
    one print period (a clean end takes milliseconds), so this waits for the next line, up to
    the bound, instead of requiring one already. Returns (last seq, the time of its last line,
    the largest gap)."""
    deadline = since_s + CONTROL_GAP_MAX_S
    while True:
        events = list(d.events(sid, after=since_seq))
        out = [wall(e["ts"]) for e in events if e["type"] == "exec.stdout"]
        if out or time.time() > deadline:
            break
        time.sleep(CONTROL_PERIOD_S / 2)
    assert out, f"the control session printed nothing for {time.time() - since_s:.1f} s"
    times = [since_s] + out
    gap = max(b - a for a, b in zip(times, times[1:]))
    assert gap < CONTROL_GAP_MAX_S, f"the control session was silent for {gap:.1f} s"
    return events[-1]["seq"], out[-1], gap


def main():
    conf = "[sessions]\noutput_limit_mib = 16\n"
    with Daemon(pools={"python": dict(warm=2, slots=4, memory_mib=384)}, extra_conf=conf) as d:
        d.wait_ready()
        ctl = d.call("POST", "/v1/sessions", body={"pool": "python", "timeout_s": 3600},
                     expect=(201,))["id"]
        d.wait_state(ctl, "running")
        t_start = time.time()
        d.post(f"/v1/sessions/{ctl}/exec",
               {"argv": ["sh", "-c", "while true; do echo alive; sleep 0.5; done"],
                "timeout_s": 3600})
        seq, last_s, _ = control_alive(d, ctl, 0, t_start)  # waits for its first line
        for name, argv, reasons, devices in PROGRAMS:
            d.wait(d.pool_full, 300, "a full pool")
            t0 = time.time()
            sid = d.call("POST", "/v1/tasks", body={"pool": "python", "argv": argv,
                                                   "timeout_s": TIMEOUT_S.get(name, 25)},
                         expect=(201,))["id"]
            s = d.wait(lambda: (x := d.session(sid))["state"] == "ended" and x,
                       TIMEOUT_S.get(name, 25) + 215,
                       f"the {name} to end")
            assert s["end_reason"] in reasons, (name, s)
            out = "".join(e.get("data", "") for e in d.events(sid) if e["type"] == "exec.stdout")
            assert "wrote" not in out, f"{name}: an unprivileged program wrote a device: {out!r}"
            tried = check_tried(name, out, devices) if devices else []
            seq, last_s, gap = control_alive(d, ctl, seq, last_s)  # kept answering all along
            assert d.get("/v1/health")["status"] == "ok"
            print(f"{name}: ended {s['end_reason']} (exit {s.get('exit_code')}) after "
                  f"{time.time() - t0:.1f} s{'; tried ' + ' '.join(tried) if tried else ''};"
                  f" control session alive, largest silence "
                  f"{gap:.2f} s (bound {CONTROL_GAP_MAX_S:.0f} s)", flush=True)
        assert d.session(ctl)["state"] == "running"
        d.post(f"/v1/sessions/{ctl}/cancel")
        console = [os.path.getsize(os.path.join(dp, f))
                   for dp, _, fs in os.walk(os.path.join(d.state, "state", "guests"))
                   for f in fs if f.startswith("console.log")]
        assert all(c <= 8 << 20 for c in console), f"console logs unbounded: {console}"
        print(f"console logs: largest {max(console or [0])} bytes (virtlogd rotates at 2 MiB)")
    print("ok")


if __name__ == "__main__":
    main()
