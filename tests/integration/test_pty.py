#!/usr/bin/env python3
"""Terminals (issue 28): execs on a pseudo-terminal through a real daemon and a real guest.

    test_pty.py [api] [cli] [bench]     (no argument: api and cli)

api: POST /v1/sessions/{id}/exec with "pty" runs the image's shell on a terminal of the size
asked; typed input (the stdin route) is echoed and answered: `echo $((6*7))` prints 42; `tty`
names /dev/pts/N and /dev/tty opens (the shell's controlling terminal); `stty size` prints
the rows and columns asked, and again after POST .../resize; `sleep` typed and then ^C (the
byte 0x03, as input) ends by SIGINT through the line discipline and the shell answers the
next command; `exit 3` gives exit_code 3. Bad sizes are 400; a resize of an exec without a
terminal (or one that is over) is 409.
Every answer is looked for only in the output that came after the question, and never
appears in the question's echo (`echo af''ter` prints "after").
"""
import base64
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon, HttpError  # noqa: E402

WAIT_S = 300  # a bound for a loaded machine under TCG, not a target


class Terminal:
    """The output of one pty exec, read from the session's followed event stream."""

    def __init__(self, d, sid, exec_id, after):
        self.d, self.sid, self.exec_id = d, sid, exec_id
        self.buf = bytearray()
        self.at = 0
        self.exit = None
        self.cv = threading.Condition()
        self.stderr_events = 0
        threading.Thread(target=self.follow, args=(after,), daemon=True).start()

    def follow(self, after):
        for ev in self.d.events(self.sid, after=after, follow=True, timeout=WAIT_S * 4):
            if ev.get("exec_id") != self.exec_id:
                continue
            with self.cv:
                if ev["type"] == "exec.stdout":
                    self.buf += (ev["data"].encode() if "data" in ev else
                                 base64.b64decode(ev["data_b64"]))
                elif ev["type"] == "exec.stderr":
                    self.stderr_events += 1
                elif ev["type"] in ("exec.exited", "exec.failed"):
                    self.exit = ev
                self.cv.notify_all()
            if self.exit:
                return

    def type(self, text):
        data = text.encode() if isinstance(text, str) else text
        self.d.call("POST", f"/v1/sessions/{self.sid}/execs/{self.exec_id}/stdin", raw=data)

    def expect(self, needle):
        needle = needle.encode()
        with self.cv:
            ok = self.cv.wait_for(lambda: self.buf.find(needle, self.at) >= 0 or self.exit,
                                  WAIT_S)
            i = self.buf.find(needle, self.at)
            if not ok or i < 0:
                raise AssertionError(f"no {needle!r} in the terminal's output after "
                                     f"{bytes(self.buf[self.at:])!r} (exit: {self.exit})")
            self.at = i + len(needle)

    def wait_exit(self):
        with self.cv:
            if not self.cv.wait_for(lambda: self.exit, WAIT_S):
                raise AssertionError(f"no exit; output {bytes(self.buf)!r}")
            return self.exit


def last_seq(d, sid):
    seq = 0
    for ev in d.events(sid):
        seq = ev.get("seq", seq)
    return seq


def run(d, sid, argv):
    """Runs argv without a terminal; (exit_code, stdout bytes)."""
    after = last_seq(d, sid)
    ex = d.post(f"/v1/sessions/{sid}/exec", {"argv": argv})["exec_id"]
    out = bytearray()
    for ev in d.events(sid, after=after, follow=True, timeout=WAIT_S):
        if ev.get("exec_id") != ex:
            continue
        if ev["type"] == "exec.stdout":
            out += ev["data"].encode() if "data" in ev else base64.b64decode(ev["data_b64"])
        elif ev["type"] in ("exec.exited", "exec.failed"):
            return ev.get("exit_code", -1), bytes(out)
    raise AssertionError(f"{argv}: no exit")


def start_pty(d, sid, argv, cols, rows):
    after = last_seq(d, sid)
    ex = d.post(f"/v1/sessions/{sid}/exec", {"argv": argv, "pty": {"cols": cols, "rows": rows}})
    return Terminal(d, sid, ex["exec_id"], after)


def check_api(d, sid):
    t = start_pty(d, sid, ["sh"], 80, 24)
    t.type("echo $((6*7))\n")
    t.expect("42")
    t.type("tty; : >/dev/tty && echo c''tty-$TERM\n")
    t.expect("/dev/pts/")
    t.expect("ctty-xterm")
    t.type("stty size\n")
    t.expect("24 80")
    d.call("POST", f"/v1/sessions/{sid}/execs/{t.exec_id}/resize", {"cols": 100, "rows": 30})
    t.type("stty size\n")
    t.expect("30 100")
    t.type("sleep 100; echo sl''ept\n")
    # ^C only once the sleep runs (a second exec, without a terminal, sees it): it must end
    # the sleep, not the shell, and the list's next command must not run
    assert run(d, sid, ["sh", "-c", "until pidof sleep; do :; done"])[0] == 0
    t.type(b"\x03")
    t.type("echo af''ter\n")
    t.expect("after")
    assert b"slept" not in bytes(t.buf), bytes(t.buf)
    code, out = run(d, sid, ["sh", "-c", "pidof sleep || echo none"])
    assert out.strip() == b"none", out
    t.type("exit 3\n")
    ex = t.wait_exit()
    assert ex["type"] == "exec.exited" and ex["exit_code"] == 3, ex
    assert t.stderr_events == 0, t.stderr_events
    for bad in ({"cols": 0, "rows": 24}, {"cols": 80, "rows": 1001}, {"cols": 80},
                {"cols": "80", "rows": 24}, [80, 24]):
        try:
            d.call("POST", f"/v1/sessions/{sid}/exec", {"argv": ["true"], "pty": bad})
            raise AssertionError(f"pty {bad} was accepted")
        except HttpError as e:
            assert e.status == 400, (bad, e.status)
        try:
            d.call("POST", f"/v1/sessions/{sid}/execs/{t.exec_id}/resize", bad)
            raise AssertionError(f"resize {bad} was accepted")
        except HttpError as e:
            assert e.status == 400, (bad, e.status)
    plain = d.post(f"/v1/sessions/{sid}/exec", {"argv": ["cat"], "stdin": True})["exec_id"]
    for ex_id in (plain, t.exec_id):  # no terminal; its terminal is over
        try:
            d.call("POST", f"/v1/sessions/{sid}/execs/{ex_id}/resize", {"cols": 90, "rows": 20})
            raise AssertionError(f"resize of exec {ex_id} was accepted")
        except HttpError as e:
            assert e.status == 409, (ex_id, e.status)
    d.call("POST", f"/v1/sessions/{sid}/execs/{plain}/stdin?eof=1", raw=b"")
    print("api: sh on a pty answered, tty/ctty, size and resize, ^C, exit 3", flush=True)


def main():
    what = set(sys.argv[1:]) or {"api", "cli"}
    with Daemon() as d:
        d.wait_ready()
        sid = d.call("POST", "/v1/sessions", body={"pool": "minimal", "timeout_s": 1800},
                     expect=(201,))["id"]
        d.wait_state(sid, "running", timeout=WAIT_S)
        if "api" in what:
            check_api(d, sid)
        if "cli" in what:
            import pty_cli  # noqa: E402  (tests/integration/pty_cli.py)
            pty_cli.check_cli(d, sid)
        if "bench" in what:
            import pty_cli  # noqa: E402
            pty_cli.bench(d, sid)
        d.call("DELETE", f"/v1/sessions/{sid}")
    print("OK")


if __name__ == "__main__":
    main()
