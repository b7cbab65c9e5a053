"""`stockade exec -it` and `exec -i` against a real daemon (imported by test_pty.py).

cli: the CLI runs on the slave of a real pseudo-terminal (Python's pty module) sized 100 x 30:
`stty size` in the guest says 30 100; the local terminal resized to 120 x 40 plus SIGWINCH to
the CLI makes it say 40 120; `echo $((6*7))` answers 42; Ctrl-C typed (0x03) ends a `sleep`
in the guest and not the CLI (raw mode: no local signal); `exit 3` is the CLI's exit code 3;
the local terminal's settings are the same after as before. A CLI killed by SIGTERM restores
them too. `exec -i` without a terminal forwards piped stdin and its end (`read x` gets it, cat
ends). `exec -it` with stdin not a terminal is refused (126) before anything is sent.

bench: keystroke -> echo round trips (one byte typed into the guest's terminal until the CLI
writes its echo back on the local terminal), against an exec's stdin round trip (a line to
`cat` through -i, until cat's copy comes back on stdout), p50 of each; both go the same way
(the stdin route, the event stream), so the ratio is what the terminal adds.
"""
import fcntl
import os
import signal
import statistics
import struct
import subprocess
import termios
import threading
import time

from cli_helpers import Cli

WAIT_S = 300


def set_size(fd, cols, rows):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class LocalTerminal:
    """A pseudo-terminal whose slave is the CLI's stdin, stdout and stderr."""

    def __init__(self, cli, sid, argv, cols=100, rows=30):
        self.master, self.slave = os.openpty()
        set_size(self.slave, cols, rows)
        self.before = termios.tcgetattr(self.slave)
        self.proc = subprocess.Popen([cli.exe, "exec", "-it", sid, "--", *argv],
                                     stdin=self.slave, stdout=self.slave, stderr=self.slave,
                                     env=cli.env(), start_new_session=True)
        self.buf = bytearray()
        self.at = 0
        self.cv = threading.Condition()
        threading.Thread(target=self.pump, daemon=True).start()

    def pump(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.cv:
                self.buf += data
                self.cv.notify_all()
            # busybox's line editor asks where the cursor is (DSR) and waits for the answer
            # a terminal would give; this one answers too
            for _ in range(data.count(b"\x1b[6n")):
                os.write(self.master, b"\x1b[1;1R")

    def type(self, data):
        os.write(self.master, data.encode() if isinstance(data, str) else data)

    def expect(self, needle, timeout=WAIT_S):
        needle = needle.encode() if isinstance(needle, str) else needle
        with self.cv:
            ok = self.cv.wait_for(lambda: self.buf.find(needle, self.at) >= 0, timeout)
            if not ok:
                raise AssertionError(f"no {needle!r} on the local terminal after "
                                     f"{bytes(self.buf[self.at:])!r}")
            self.at = self.buf.find(needle, self.at) + len(needle)

    def close(self):
        os.close(self.slave)
        os.close(self.master)


def check_cli(d, sid):
    cli = Cli(d)
    t = LocalTerminal(cli, sid, ["sh"])
    t.expect("$ ")  # the prompt: the CLI's terminal is raw by now (typed bytes not echoed here)
    t.type("stty size\n")
    t.expect("30 100")
    set_size(t.slave, 120, 40)
    t.proc.send_signal(signal.SIGWINCH)
    t.type("stty size\n")  # the resize and this line travel separately: ask until it shows
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            t.expect("40 120", timeout=5)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            t.type("stty size\n")
    t.type("echo $((6*7))\n")
    t.expect("42")
    t.type("sleep 100; echo sl''ept\n")
    code = subprocess.run([cli.exe, "exec", sid, "--", "sh", "-c", "until pidof sleep; do :; done"],
                          env=cli.env(), capture_output=True, timeout=WAIT_S).returncode
    assert code == 0, code
    t.type(b"\x03")
    t.type("echo af''ter\n")
    t.expect("after")
    assert b"slept" not in t.buf and t.proc.poll() is None, bytes(t.buf)
    t.type("exit 3\n")
    assert t.proc.wait(WAIT_S) == 3, t.proc.returncode
    assert termios.tcgetattr(t.slave) == t.before, "the local terminal was not restored"
    t.close()

    # killed: the terminal's settings come back all the same
    t = LocalTerminal(cli, sid, ["sh"])
    t.expect("$ ")
    t.type("echo re''ady\n")
    t.expect("ready")
    assert termios.tcgetattr(t.slave) != t.before, "raw mode was not set"
    t.proc.send_signal(signal.SIGTERM)
    t.proc.wait(WAIT_S)
    assert termios.tcgetattr(t.slave) == t.before, "not restored after SIGTERM"
    t.close()

    # -i alone: piped stdin, no terminal; its end closes the exec's stdin
    code, out, err = cli.run("exec", "-i", sid, "--", "sh", "-c", "read x; echo got-$x; cat",
                             input=b"hello\nrest\n")
    if (code, out) != (0, "got-hello\nrest\n"):
        logs = cli.run("logs", "--json", sid)[1].splitlines()[-12:]
        raise AssertionError(f"exec -i: {(code, out, err)}; the session's last events: {logs}")
    code, out, err = cli.run("exec", "-it", sid, "--", "sh", input=b"")
    assert code == 126 and "terminal" in err, (code, out, err)
    print("cli: exec -it (size, SIGWINCH, Ctrl-C, exit 3, terminal restored), exec -i",
          flush=True)


def bench(d, sid, n=50):
    cli = Cli(d)
    t = LocalTerminal(cli, sid, ["sh"])
    t.expect("$ ")
    t.type("stty -icanon; echo re''ady\n")  # keys echo one by one
    t.expect("ready")
    keys = []
    for i in range(n):
        c = "abcdefghijklmnopqrstuvwxyz"[i % 26]
        start = time.monotonic()
        t.type(c)
        t.expect(c)
        keys.append(time.monotonic() - start)
    t.type(b"\x03exit\n")
    t.proc.wait(WAIT_S)
    t.close()
    p = subprocess.Popen([cli.exe, "exec", "-i", sid, "--", "cat"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=cli.env())
    lines = []
    for i in range(n):
        start = time.monotonic()
        p.stdin.write(f"line{i}\n".encode())
        p.stdin.flush()
        got = p.stdout.readline()
        assert got == f"line{i}\n".encode(), got
        lines.append(time.monotonic() - start)
    p.stdin.close()
    p.wait(WAIT_S)
    k, s = statistics.median(keys) * 1000, statistics.median(lines) * 1000
    print(f"bench: keystroke->echo p50 {k:.1f} ms, exec stdin->stdout p50 {s:.1f} ms, "
          f"ratio {k / s:.2f} (n={n})", flush=True)
