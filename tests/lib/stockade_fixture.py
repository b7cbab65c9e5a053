"""A real stockaded for integration tests: its own state directory, domain prefix and TCP
port, the project's images, real libvirtd and real guests. Standard library only.

    with Daemon(pools={"minimal": dict(warm=1, slots=2)}) as d:
        d.wait_ready()
        sid = d.post("/v1/tasks", {...})["id"]
        for ev in d.events(sid, follow=True): ...

Skips (exit 77, or failure under STOCKADE_MUST_WORK=1) when the host cannot run it.
On exit the daemon is stopped with SIGTERM and the test fails if any domain with its
prefix is left behind.

Authentication (issue 5): TCP callers need a token. At start the fixture asks the daemon,
over its unix socket (where the peer is an operator), for a token of the built-in tenant
"default" and for an operator token; every TCP request then carries one of them: the
operator token for /metrics and /v1/admin/..., the tenant token for everything else
(pass token=... to speak as someone else, token=None to send none). Restarting on the same
state directory asks again: tokens are per start, the tenant and its sessions stay.

HTTPS (issue 30): Daemon(tls=dict(cert=..., key=..., ca=...)) serves its TCP API (and E2B
listeners) with that certificate; the fixture's TCP requests then verify it against ca
(d.connection() opens one; d.scheme is "https"). make_tls() makes a throw-away CA and
certificates with openssl (tests/lib/testca.sh).
"""
import contextlib
import hashlib
import http.client
import json
import math
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time

SKIP = 77


def skip(why):
    if os.environ.get("STOCKADE_MUST_WORK") == "1":
        print(f"FAIL (STOCKADE_MUST_WORK=1, cannot skip): {why}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


AUTO = object()  # request(token=AUTO): the fixture's own token for that path
TESTCA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testca.sh")


def make_tls(folder, name, ca="ca"):
    """A certificate for 127.0.0.1 signed by the CA `ca` in folder (made on first use):
    dict(cert, key, ca) as Daemon(tls=...) takes it."""
    if shutil.which("openssl") is None:
        skip("openssl is not installed (.ci/packages)")
    subprocess.run(["sh", TESTCA, folder, name, ca], check=True)
    return dict(cert=os.path.join(folder, f"{name}.pem"), key=os.path.join(folder, f"{name}.key"),
                ca=os.path.join(folder, f"{ca}.pem"))


def https_context(ca):
    return ssl.create_default_context(cafile=ca)


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over the daemon's unix socket (the operator's way in)."""

    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class HttpError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body!r}")
        self.status = status
        self.body = body


def guest_memory():
    """STOCKADE_TEST_GUEST_MEMORY=template|copy runs every test daemon with that [daemon]
    guest_memory (issue 15: the daemon suites on templated clones); unset: the default."""
    mode = os.environ.get("STOCKADE_TEST_GUEST_MEMORY", "")
    if mode not in ("", "template", "copy"):
        raise ValueError(f"STOCKADE_TEST_GUEST_MEMORY={mode!r}: template or copy")
    return mode


def cached_state(build, pools, extra_conf):
    """A state directory shared by every test daemon of this build with the same pools and
    config, so snapshots (and the accel verdict) are made once per build, not once per test:
    a daemon start then restores instead of cold-booting every slot. The database, artifacts
    and logs of the previous test are removed; tests using it must not run at the same time
    (ctest RUN_SERIAL). STOCKADE_TEST_FRESH_STATE=1 gives every test a fresh directory."""
    # The build's path is part of the key: two checkouts testing on one host at once (a fresh
    # clone's CI beside a working tree) once shared a domain prefix, and each daemon destroyed
    # the other's guests as leftovers of its own.
    sig = hashlib.sha256(json.dumps([os.path.realpath(build), sorted(pools.items()), extra_conf,
                                     guest_memory()],
                                    sort_keys=True).encode()).hexdigest()[:8]
    root = os.path.join(build, "test-state", sig)
    os.makedirs(os.path.join(build, "test-state"), exist_ok=True)
    os.makedirs(root, exist_ok=True)
    for p in (os.path.dirname(root), root):
        os.chmod(p, 0o711)
    st = os.path.join(root, "state")
    for name in ("stockade.db", "stockade.db-wal", "stockade.db-shm", "status.json"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(st, name))
    shutil.rmtree(os.path.join(st, "artifacts"), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(root, "stockaded.log"))
    return root, f"stkc{sig[:6]}-"


def wall(ts):
    """An API time ("2026-11-29T23:13:30.101Z", UTC) as seconds since the epoch."""
    from datetime import datetime, timezone
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc) \
        .timestamp()


def ledger_rows(state_dir):
    """The reservation ledger and the session records as the daemon stored them (read-only:
    the daemon may be running): ({session_id: reservation}, {session_id: session},
    {session_id: number of reservations})."""
    path = os.path.join(state_dir, "state", "stockade.db")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    res = {r["session_id"]: dict(r) for r in db.execute("SELECT * FROM reservations")}
    ses = {r["id"]: dict(r) for r in db.execute("SELECT * FROM sessions")}
    count = dict(db.execute("SELECT session_id, count(*) FROM reservations GROUP BY session_id")
                 .fetchall())
    db.close()
    return res, ses, count


def ledger_want_charge(r, s):
    """What hostd/api/API.md "Quotas" says a session is charged: its guest's life, vcpus x
    ceil(stopped - started) whole seconds, at most what it reserved; 0 if it never ran."""
    if s["started_usec"] <= 0:
        return 0
    return min(r["reserved_guest_s"],
               r["vcpus"] * math.ceil((s["stopped_usec"] - s["started_usec"]) / 1e6))


def qemu_guests(prefix):
    """{pid: guest name} of the QEMU processes running a guest whose name has this prefix
    (libvirt may know them or not)."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        names = [a[len(b"guest="):].split(b",")[0].decode(errors="replace")
                 for a in args if a.startswith(b"guest=")]
        found.update({int(pid): n for n in names if n.startswith(prefix)})
    return found


class Daemon:
    def __init__(self, build_dir=None, pools=None, extra_conf="", state_dir=None, prefix=None,
                 keep_state=False, hosts=None, tls=None, env=None, shutdown="end"):
        self.build = build_dir or os.environ.get("STOCKADE_BUILD_DIR")
        if not self.build:
            skip("STOCKADE_BUILD_DIR is not set (ctest sets it)")
        # another build's images (the sanitizer build has none of its own)
        self.images = os.environ.get("STOCKADE_IMAGE_DIR") or os.path.join(self.build, "images")
        self.pools = pools or {"minimal": dict(warm=1, slots=2)}
        self.extra_conf = extra_conf
        cached = (state_dir is None and prefix is None and not keep_state and
                  os.environ.get("STOCKADE_TEST_FRESH_STATE") != "1")
        if cached:
            state_dir, prefix = cached_state(self.build, self.pools, extra_conf)
        self.own_state = state_dir is None
        self.state = state_dir or tempfile.mkdtemp(prefix="stockade-it.")
        os.chmod(self.state, 0o711)  # QEMU runs as libvirt-qemu: it must traverse to the disks
        self.prefix = prefix or "stkit" + secrets.token_hex(3) + "-"
        self.port = free_port()
        self.keep_state = keep_state
        self.hosts = hosts or {}  # name -> [address]: the daemon's own /etc/hosts lines
        self.tls = tls  # dict(cert, key, ca): HTTPS on the TCP listeners
        self.scheme = "https" if tls else "http"
        self.env = env  # the daemon's environment (None: this process's)
        # [daemon] shutdown: "end" unless a test asks (None: the daemon's default, keep): a
        # clean stop then leaves no guest behind, which __exit__ checks
        self.shutdown = shutdown
        self.proc = None
        self.log_path = os.path.join(self.state, "stockaded.log")
        self.socket_path = os.path.join(self.state, "state", "api.sock")
        self.token = None        # tenant "default"
        self.admin_token = None  # an operator token

    # ------------------------------------------------------------------ life cycle
    def config_text(self):
        lines = ["[daemon]", f"state_dir = {self.state}/state",
                 f"image_dir = {self.images}", f"domain_prefix = {self.prefix}",
                 "workspace_mib = 128"]
        if self.shutdown:
            lines.append(f"shutdown = {self.shutdown}")
        if guest_memory():
            lines.append(f"guest_memory = {guest_memory()}")
        lines += ["[api]", f"tcp_port = {self.port}", "request_timeout_s = 30"]
        if self.tls:
            lines += [f"tls_cert = {self.tls['cert']}", f"tls_key = {self.tls['key']}"]
        for name, p in self.pools.items():
            lines += [f"[pool {name}]", f"image = {p.get('image', name)}",
                      f"memory_mib = {p.get('memory_mib', 256)}",
                      f"warm = {p.get('warm', 1)}", f"slots = {p.get('slots', 2)}"]
            if "code_kernel" in p:
                lines.append(f"code_kernel = {'true' if p['code_kernel'] else 'false'}")
        return "\n".join(lines) + "\n" + self.extra_conf

    def start(self):
        if os.geteuid() != 0:
            skip("needs root (libvirt qemu:///system, guest disks)")
        exe = os.path.join(self.build, "hostd", "stockaded")
        for name, p in self.pools.items():
            img = os.path.join(self.images, p.get("image", name), "manifest.json")
            if not os.path.exists(img):
                skip(f"image {p.get('image', name)} is not built ({img})")
        if subprocess.run(["virsh", "-c", "qemu:///system", "version"],
                          capture_output=True).returncode != 0:
            skip("libvirtd is not reachable (start virtlogd -d; libvirtd -d)")
        conf = os.path.join(self.state, "stockaded.conf")
        with open(conf, "w") as f:
            f.write(self.config_text())
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.private_hosts([exe, "-c", conf]), stdout=self.log,
                                     stderr=self.log, env=self.env)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                self.get("/v1/health")
                self.authorize()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"stockaded exited: {self.tail_log()}")
                time.sleep(0.1)
        raise RuntimeError(f"stockaded did not answer: {self.tail_log()}")

    def private_hosts(self, argv):
        """argv run with self.hosts added to /etc/hosts in a mount namespace of its own (the
        machine's file is untouched): names with the answers a test needs. unshare and sh exec,
        so the daemon keeps the pid Popen returns."""
        if not self.hosts:
            return argv
        path = os.path.join(self.state, "hosts")
        with open("/etc/hosts") as f, open(path, "w") as out:
            out.write(f.read().rstrip("\n") + "\n")
            out.writelines(f"{a} {name}\n" for name, addrs in self.hosts.items() for a in addrs)
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', path, *argv]

    def authorize(self):
        """Tokens for the TCP requests, made over the unix socket."""
        self.token = self.unix_call("POST", "/v1/admin/tenants/default/tokens")["token"]
        self.admin_token = self.unix_call("POST", "/v1/admin/tokens")["token"]

    def tail_log(self, n=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=180):
        if not self.proc:
            return None
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def leftover_domains(self):
        """Domains libvirt still knows by this daemon's prefix, and QEMU processes running a
        guest of that prefix that libvirt may no longer know (orphans)."""
        out = subprocess.run(["virsh", "-c", "qemu:///system", "list", "--all", "--name"],
                             capture_output=True, text=True).stdout
        left = [n for n in out.split() if n.startswith(self.prefix)]
        left += [f"qemu pid {pid} ({n})" for pid, n in qemu_guests(self.prefix).items()
                 if n not in left]
        return left

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        rc = self.stop()
        left = self.leftover_domains()
        for _ in range(50):  # a destroyed guest's QEMU may take a moment to exit
            if not left:
                break
            time.sleep(0.1)
            left = self.leftover_domains()
        if exc[0] is not None or left or rc != 0:
            print("---- stockaded log (tail) ----\n" + self.tail_log(60), file=sys.stderr)
        for n in left:  # never leave guests behind, even on failure
            if n.startswith("qemu pid "):
                with contextlib.suppress(OSError):
                    os.kill(int(n.split()[2]), signal.SIGKILL)
            else:
                subprocess.run(["virsh", "-c", "qemu:///system", "destroy", n],
                               capture_output=True)
        if self.own_state and not self.keep_state:
            shutil.rmtree(self.state, ignore_errors=True)
        if exc[0] is None:
            assert rc == 0, f"stockaded exited {rc} on SIGTERM"
            bad = [line for line in self.tail_log(100000).splitlines()
                   if "is not a session state transition" in line]
            assert not bad, f"the daemon made a session state change it does not allow: {bad}"
            assert not left, f"domains or QEMU processes left after a clean stop: {left}"
        return False

    # ------------------------------------------------------------------ HTTP
    def connection(self, timeout=60, port=None, **kw):
        """An HTTP(S) connection to the TCP API (or another of the daemon's TCP ports): HTTPS
        verified against the fixture's CA when the daemon serves TLS."""
        if self.tls:
            return http.client.HTTPSConnection("127.0.0.1", port or self.port, timeout=timeout,
                                               context=https_context(self.tls["ca"]), **kw)
        return http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=timeout, **kw)

    def auth_headers(self, path, token=AUTO):
        if token is AUTO:
            admin = path.startswith("/metrics") or path.startswith("/v1/admin")
            token = self.admin_token if admin else self.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def request(self, method, path, body=None, raw=None, headers=None, timeout=60, token=AUTO,
                unix=False):
        conn = (UnixHTTPConnection(self.socket_path, timeout=timeout) if unix else
                self.connection(timeout))
        hdrs = {} if unix else self.auth_headers(path, token)
        hdrs.update(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        payload = r.read()
        conn.close()
        return r.status, r.getheaders(), payload

    def call(self, method, path, body=None, raw=None, expect=(200, 201, 202), token=AUTO,
             unix=False, headers=None):
        status, _, payload = self.request(method, path, body=body, raw=raw, token=token,
                                          unix=unix, headers=headers)
        if status not in expect:
            raise HttpError(status, payload)
        return json.loads(payload) if payload else None

    def unix_call(self, method, path, body=None, expect=(200, 201, 202)):
        """As an operator, over the unix socket."""
        return self.call(method, path, body=body, expect=expect, unix=True)

    def get(self, path):
        return self.call("GET", path)

    def post(self, path, body=None):
        return self.call("POST", path, body=body if body is not None else {})

    def wait(self, cond, timeout, what, step=0.1):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = cond()
            if v:
                return v
            time.sleep(step)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}\n" +
                             self.tail_log())

    def pool_full(self):
        p = self.get("/v1/pool")
        return p["accel_decided"] and all(x["idle"] >= x["warm"] for x in p["pools"])

    def wait_ready(self, timeout=300, appliance_timeout=420):
        """The pool is full and the extraction appliance is up. The appliance gets longer:
        a launch that hangs is killed at 180 s under TCG and retried 30 s later."""
        self.wait(self.pool_full, timeout, "a full pool")
        self.wait(lambda: "extraction appliance ready" in self.tail_log(200),
                  max(timeout, appliance_timeout), "the extraction appliance")

    def session(self, sid):
        return self.get(f"/v1/sessions/{sid}")

    def all_sessions(self):
        """Every session the caller may see, following the list's pages."""
        out, before = [], None
        while True:
            page = self.get("/v1/sessions?limit=500" + (f"&before={before}" if before else ""))
            out += page["sessions"]
            before = page["next"]
            if not before:
                return out

    def wait_state(self, sid, state, timeout=120):
        return self.wait(lambda: self.session(sid)["state"] == state and self.session(sid),
                         timeout, f"session {sid} to be {state}")

    def events(self, sid, after=0, follow=False, timeout=300, token=AUTO):
        """Yields events (dicts) as they arrive; heartbeats are skipped."""
        q = f"/v1/sessions/{sid}/events?after={after}" + ("&follow=1" if follow else "")
        conn = self.connection(timeout)
        conn.request("GET", q, headers=self.auth_headers(q, token))
        r = conn.getresponse()
        if r.status != 200:
            raise HttpError(r.status, r.read())
        try:
            while True:
                line = r.readline()
                if not line:
                    return
                ev = json.loads(line)
                if ev.get("type") != "heartbeat":
                    yield ev
        finally:
            conn.close()
