#!/usr/bin/env python3
"""Readiness and metrics of a real stockaded (issue 30), one daemon for both.

Readiness: the test is the service manager. It binds a unix datagram socket under an abstract
name, starts the daemon with NOTIFY_SOCKET=@that and WATCHDOG_USEC set, and reads what the
daemon says (sd_notify's protocol, hostd/base/notify.c):
  - a STATUS= line before READY=1, STATUS lines naming the pool, "serving: ..." once a guest
    is idle;
  - READY=1 once, and only when the API answers: the moment READY=1 arrives the test connects
    to the TCP API and GET /v1/health must answer 200 (causality, no clock), and the daemon's
    log says the API listened before it told READY=1;
  - WATCHDOG=1 again and again while the daemon runs (three at least);
  - STOPPING=1 after SIGTERM.
Its stderr is "the journal" (JOURNAL_STREAM names the log file's device and inode): every
line the daemon writes carries a syslog priority (<6>info: ...) and no time of its own.
`stockade pool --wait minimal` is started before the daemon: it must still be waiting (not
failed at once on the missing socket) when the daemon starts, and exit 0 once a guest is idle.

Metrics (GET /metrics through the same daemon): stockade_build_info, stockade_pool_slots; a
task that completes and a session that is cancelled each move their
stockade_sessions_ended_total{reason} series by one; a creation refused by max_vcpus moves
stockade_admission_refusals_total{quota="max_vcpus"} by one; stockade_http_requests_total
{class,status} moves by exactly the requests made.
"""
import glob
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon, HttpError  # noqa: E402


class Manager(threading.Thread):
    """The service manager's end of NOTIFY_SOCKET: every datagram, in order; on READY=1 it
    asks the API for /v1/health at once."""

    def __init__(self):
        super().__init__(daemon=True)
        self.name_ = "@stockade-test-" + secrets.token_hex(6)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.name_[1:])
        self.sock.settimeout(0.5)
        self.got = []            # every datagram's text
        self.health_on_ready = None
        self.port = None
        self.stop = False
        self.cv = threading.Condition()

    def run(self):
        while not self.stop:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            text = data.decode("utf-8", "replace")
            if "READY=1" in text.split("\n") and self.health_on_ready is None:
                self.health_on_ready = self.health()
            with self.cv:
                self.got.append(text)
                self.cv.notify_all()

    def health(self):
        import http.client
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            c.request("GET", "/v1/health")
            r = c.getresponse()
            r.read()
            return r.status
        except OSError as e:
            return f"no answer: {e}"

    def lines(self, key):
        with self.cv:
            return [ln for t in self.got for ln in t.split("\n") if ln.startswith(key)]

    def wait_for(self, pred, timeout, what):
        with self.cv:
            if not self.cv.wait_for(lambda: pred(self), timeout):
                raise AssertionError(f"timed out waiting for {what}; got {self.got!r}")


def metrics(d):
    status, _, body = d.request("GET", "/metrics")
    assert status == 200, (status, body)
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def check_metrics(d):
    m0 = metrics(d)
    assert any(k.startswith('stockade_build_info{version="') and v == 1 for k, v in m0.items()), m0
    assert m0['stockade_pool_slots{pool="minimal"}'] == 2, m0
    for reason in ("completed", "cancelled", "closed", "host_restart", "tenant_removed"):
        assert f'stockade_sessions_ended_total{{reason="{reason}"}}' in m0, reason
    done = 'stockade_sessions_ended_total{reason="completed"}'
    cancelled = 'stockade_sessions_ended_total{reason="cancelled"}'
    refused = 'stockade_admission_refusals_total{quota="max_vcpus"}'

    t = d.post("/v1/tasks", {"pool": "minimal", "argv": ["true"], "timeout_s": 60})
    d.wait(lambda: d.get(f"/v1/sessions/{t['id']}")["state"] == "ended", 300, "the task's end")
    s = d.post("/v1/sessions", {"pool": "minimal", "timeout_s": 120})
    d.wait(lambda: d.get(f"/v1/sessions/{s['id']}")["state"] == "running", 300, "a session")
    d.post(f"/v1/sessions/{s['id']}/cancel")
    d.wait(lambda: d.get(f"/v1/sessions/{s['id']}")["state"] == "ended", 300, "its end")
    caps = d.unix_call("POST", "/v1/admin/tenants", {"name": "caps"})
    d.unix_call("PUT", f"/v1/admin/tenants/{caps['id']}/quota", {"max_vcpus": 0})
    try:
        d.call("POST", "/v1/sessions", {"pool": "minimal"}, token=caps["token"])
        raise AssertionError("a session over max_vcpus = 0 was admitted")
    except HttpError as e:
        assert e.status == 429, e
    m1 = metrics(d)
    assert m1[done] == m0[done] + 1, (m0[done], m1[done])
    assert m1[cancelled] == m0[cancelled] + 1, (m0[cancelled], m1[cancelled])
    assert m1[refused] == m0[refused] + 1, (m0[refused], m1[refused])
    # request counts: exactly the requests made in between (m0's own GET /metrics is counted
    # once its answer is made, so m1 holds it)
    for cls, status, n in (("metrics", "2xx", 1), ("tasks", "2xx", 1), ("sessions", "4xx", 1),
                           ("admin", "2xx", 2), ("exec", "2xx", 0)):
        k = f'stockade_http_requests_total{{class="{cls}",status="{status}"}}'
        assert m1[k] == m0[k] + n, (k, m0[k], m1[k])
    print("metrics ok: build_info, pool slots; ended{completed}, ended{cancelled}, "
          "refusals{max_vcpus} each moved by one; request counts by class and status exact")


def main():
    mgr = Manager()
    mgr.start()
    d = Daemon()
    # The workspace disk template is made again at this start (mkfs.ext4, which talks even with
    # -q): whatever a child program says must not reach the journal without our priority. A
    # cached state has the template already, which once hid that from this test.
    for f in glob.glob(os.path.join(d.state, "state", "templates", "workspace-*.raw")):
        os.unlink(f)
    # stderr is "the journal": the fixture appends to this file, so its device and inode are
    # what systemd would put in JOURNAL_STREAM for the daemon's stderr stream
    open(d.log_path, "ab").close()
    st = os.stat(d.log_path)
    d.env = dict(os.environ, NOTIFY_SOCKET=mgr.name_, WATCHDOG_USEC="1000000",
                 JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    mgr.port = d.port
    cli = os.path.join(d.build, "tools", "stockade")
    waiter = subprocess.Popen([cli, "pool", "--wait", "minimal",
                               "--wait-timeout", "600"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, STOCKADE_SOCKET=d.socket_path))
    # Not a timing bound: the waiter must still be there when the daemon starts (the old CLI
    # failed at once on the missing socket).
    for _ in range(20):
        assert waiter.poll() is None, f"pool --wait gave up before the daemon started: " \
            f"{waiter.communicate()}"
        time.sleep(0.1)
    with d:
        mgr.wait_for(lambda m: m.health_on_ready is not None, 120, "READY=1")
        assert mgr.health_on_ready == 200, \
            f"READY=1 came before the API answered: {mgr.health_on_ready}"
        # The same order in the daemon's own log, which one thread writes in the order it
        # acts (the connect above cannot see a READY=1 sent a moment before listen()).
        log = d.tail_log(100000)
        api_at, ready_at = log.find("info: API on "), log.find("readiness: READY=1 told")
        assert 0 <= api_at < ready_at, f"READY=1 before the API listened:\n{log}"
        mgr.wait_for(lambda m: len(m.lines("WATCHDOG=1")) >= 3, 120, "three WATCHDOG=1")
        out, err = waiter.communicate(timeout=600)
        assert waiter.returncode == 0, (waiter.returncode, out, err)
        assert "minimal" in out, out
        # a guest is idle: the pools' progress turns to "serving" (on the next status tick)
        mgr.wait_for(lambda m: any(ln.startswith("STATUS=serving: pool minimal:")
                                   for ln in m.lines("STATUS=")), 60, "STATUS=serving")
        status = mgr.lines("STATUS=")
        first_ready = next(i for i, t in enumerate(mgr.got) if "READY=1" in t.split("\n"))
        assert any("STATUS=" in t for t in mgr.got[:first_ready]), mgr.got
        assert any("pool minimal:" in ln for ln in status), status
        assert len(mgr.lines("READY=1")) == 1, mgr.got
        print(f"readiness ok: READY=1 answered /v1/health at once; {len(status)} STATUS lines "
              f"(last {status[-1]!r}); pool --wait started first exited 0")
        check_metrics(d)
    mgr.wait_for(lambda m: m.lines("STOPPING=1"), 30, "STOPPING=1")
    lines = d.tail_log(100000).splitlines()
    bad = [ln for ln in lines if not re.match(r"<[3467]>(error|warn|info|debug): ", ln)]
    assert lines and not bad, f"lines without a journal priority (or with our own time): {bad[:5]}"
    assert any(ln.startswith("<6>info: ") for ln in lines), lines[:5]
    print(f"journal ok: {len(lines)} lines, each with its syslog priority and no time of ours")
    mgr.stop = True
    print("stopping ok: STOPPING=1 on SIGTERM")
    print("ok")


if __name__ == "__main__":
    main()
