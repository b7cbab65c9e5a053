"""Helpers for the CLI's golden and integration tests: run the `stockade` binary against a
daemon started by tests/lib/stockade_fixture.py, and normalise what varies between runs
(ids, times, durations, paths, counters). Standard library only."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from stockade_fixture import Daemon, skip  # noqa: E402,F401

SAMPLE = os.path.normpath(os.path.join(HERE, "..", "..", "tools", "sample", "clean_csv"))
PY_POOL = {"python": dict(warm=1, slots=2, memory_mib=384)}


def stockade_binary():
    build = os.environ.get("STOCKADE_BUILD_DIR")
    if not build:
        skip("STOCKADE_BUILD_DIR is not set (ctest sets it)")
    exe = os.path.join(build, "tools", "stockade")
    if not os.access(exe, os.X_OK):
        raise AssertionError(f"{exe} is not built")
    return exe


class Cli:
    """Runs stockade with the daemon's unix socket (or no daemon at all)."""

    def __init__(self, daemon=None, socket=None):
        self.exe = stockade_binary()
        self.daemon = daemon
        self.socket = socket or (os.path.join(daemon.state, "state", "api.sock") if daemon else
                                 "/nonexistent/stockade/api.sock")

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("STOCKADE_") or k in ("STOCKADE_BUILD_DIR",
                                                        "STOCKADE_MUST_WORK")}
        env["STOCKADE_SOCKET"] = self.socket
        env.pop("NO_COLOR", None)
        env.update(extra or {})
        return env

    def run(self, *args, timeout=300, env=None, cwd=None, input=None):
        p = subprocess.run([self.exe, *args], capture_output=True, timeout=timeout,
                           env=self.env(env), cwd=cwd, input=input)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    def popen(self, *args, env=None, cwd=None):
        return subprocess.Popen([self.exe, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env(env), cwd=cwd)


ID_RE = re.compile(r"ses_[a-z2-7]{26}")


def normalise(text, replace=()):
    """Stable text: ids numbered by first appearance, times, durations and sizes of things
    that vary, and the given (literal, placeholder) pairs."""
    for literal, placeholder in replace:
        if literal:
            text = text.replace(literal, placeholder)
    ids = {}
    text = ID_RE.sub(lambda m: ids.setdefault(m.group(0), f"ses_<ID{len(ids) + 1}>"), text)
    subs = [
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<TS>"),
        (r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?", "<TIME>"),
        (r"\b\d\d:\d\d:\d\d\.\d{3}\b", "<T>"),
        (r"\bpid \d+", "pid <PID>"),
        (r"cpu \d+\.\d+\+\d+\.\d+ s rss [\d.]+ [KMG]?i?B", "cpu <CPU> rss <RSS>"),
        (r"\b\d+ (h|min) \d+ (min|s)\b", "<DUR>"),
        (r"\b\d+(\.\d+)? (ms|s)\b", "<DUR>"),
    ]
    for pattern, placeholder in subs:
        text = re.sub(pattern, placeholder, text)
    return text
