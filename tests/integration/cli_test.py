#!/usr/bin/env python3
"""Integration tests of the `stockade` CLI against a real stockaded, real libvirtd and real
guests (one daemon for every case, started by tests/lib/stockade_fixture.py):

  exit codes   run passes 0 and 7 through; 124 on timeout; 127 when the guest has no such
               program (exec too); 125 for a pool the daemon does not have (the task could not
               start: it was 126, "bad usage", though the daemon refused it)
  sigint       Ctrl-C during run cancels the task and still downloads what it wrote; exit 130
  resume       logs -f through a proxy that cuts the event stream resumes by seq: every
               event exactly once, in order
  cp           upload and download round trips are byte-exact (file, folder, whole workspace)
  doctor       a libvirt socket that does not exist is named as the problem (exit 1)
  usage        bad command lines exit 126 with a message that names the fix; "did you mean"
               for a verb, a sub-verb and a long option; -a is only logs' --after; a token file
               open to others or empty is refused before anything is sent
  tenants      the admin API: ls, create, quota, usage (a 404 fails); a tenant by name or id
  tokens       tokens create (the token alone on stdout, it authenticates), ls (never the
               token), revoke (then 401: exit 1), an operator token; which token is sent:
               --token > --token-file > STOCKADE_TOKEN > STOCKADE_TOKEN_FILE
  tenants rm   refused (1, counting it) while the tenant has a live session; with
               --cancel-sessions the session ends tenant_removed with its files salvaged,
               the tenant's token is refused after, its usage stays readable by name, and the
               name is free again
"""
import hashlib
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_helpers import PY_POOL, SAMPLE, Cli, Daemon  # noqa: E402

SLOW_WRITER = r"""
import time, pathlib
pathlib.Path("out").mkdir(exist_ok=True)
for i in range(1, 1000):
    pathlib.Path(f"out/part{i:03}.txt").write_text(f"part {i}\n" * 50)
    print(f"wrote {i}", flush=True)
    time.sleep(0.25)
"""

TICKER = r"""
import time
for i in range(1, 21):
    print(f"tick {i}", flush=True)
    time.sleep(0.25)
"""


def expect(cond, what, *details):
    if not cond:
        raise AssertionError(what + "".join(f"\n  {d}" for d in details))


def ids_in(text):
    return re.findall(r"ses_[a-z2-7]{26}", text)


# ---------------------------------------------------------------------- cases

def case_exit_codes(cli, tmp):
    rc, out, err = cli.run("run", "--no-download", "--", "python3", "-c", "print('zero')")
    expect(rc == 0 and out == "zero\n", "exit 0 passes through", rc, out, err)
    rc, out, err = cli.run("run", "--no-download", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
    expect(rc == 7 and out == "out\n" and err.startswith("err\n"), "exit 7 passes through",
           rc, out, err)
    expect("completed, exit 7" in err, "summary names the exit code", err)
    rc, out, err = cli.run("run", "--no-download", "--timeout", "4", "--", "sleep", "60")
    expect(rc == 124 and "timed_out" in err, "a task over its timeout exits 124", rc, err)
    rc, out, err = cli.run("run", "--no-download", "--", "no-such-program")
    expect(rc == 127 and "no such program in the guest" in err, "a missing program exits 127",
           rc, err)
    rc, out, err = cli.run("run", "--pool", "nosuch", "--", "true")
    expect(rc == 125 and "no pool (image) named 'nosuch'" in err,
           "an unknown pool: the task could not start (125), as documented", rc, err)
    rc, out, err = Cli(socket="/nonexistent/api.sock").run("run", "--", "true")
    expect(rc == 125 and "is stockaded running?" in err, "no daemon: 125 naming the fix", rc, err)
    print("exit codes ok: 0, 7, 124, 127 (missing program), 125 (unknown pool), 125 (no daemon)")


def case_sigint(cli, tmp):
    job = os.path.join(tmp, "slow")
    os.makedirs(job)
    with open(os.path.join(job, "w.py"), "w") as f:
        f.write(SLOW_WRITER)
    dl = os.path.join(tmp, "slow-out")
    p = cli.popen("run", "--upload", job, "--download", dl, "--", "python3", "w.py")
    last = 0
    deadline = time.time() + 120
    while last < 10 and time.time() < deadline:
        line = p.stdout.readline().decode()
        if not line:
            raise AssertionError("the task ended before Ctrl-C: " + p.stderr.read().decode())
        last = int(line.split()[1])
    t0 = time.time()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=180)
    err = err.decode()
    expect(p.returncode == 130, "run exits 130 after Ctrl-C", p.returncode, err)
    expect("cancelling" in err and "cancelled, exit 130" in err, "Ctrl-C cancelled the task", err)
    parts = sorted(os.listdir(os.path.join(dl, "out")))
    for i in range(1, last + 1):
        name = f"part{i:03}.txt"
        expect(name in parts, f"{name} (written before Ctrl-C) was downloaded", parts)
        with open(os.path.join(dl, "out", name)) as f:
            expect(f.read() == f"part {i}\n" * 50, f"{name} is whole")
    print(f"sigint ok: {len(parts)} files back (>= {last} printed), "
          f"{time.time() - t0:.1f} s from Ctrl-C to exit")


class CuttingProxy:
    """TCP proxy to the daemon that cuts the first event stream after `cut_after` events."""

    def __init__(self, port, cut_after=5):
        self.port, self.cut_after, self.cuts, self.connections = port, cut_after, 0, 0
        self.srv = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.srv.getsockname()[1]}"
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def handle(self, c):
        u = socket.create_connection(("127.0.0.1", self.port))
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = c.recv(65536)
            if not chunk:
                return
            head += chunk
        cut = b"/events" in head.split(b"\r\n")[0] and self.cuts == 0
        self.cuts += cut
        u.sendall(head)
        threading.Thread(target=self.pump, args=(c, u), daemon=True).start()
        seen = 0
        while True:
            data = u.recv(65536)
            if not data:
                break
            seen += data.count(b'"seq":')
            if cut and seen >= self.cut_after:
                c.sendall(data[:len(data) // 2])  # part of a line, then the cut
                break
            c.sendall(data)
        for s in (c, u):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass

    def close(self):
        self.srv.close()


def case_resume(cli, d, tmp):
    body = {"pool": "python", "argv": ["python3", "t.py"], "timeout_s": 120,
            "files": [{"path": "t.py", "content": TICKER}]}
    sid = d.call("POST", "/v1/tasks", body=body, expect=(201,))["id"]
    proxy = CuttingProxy(d.port, cut_after=5)
    try:
        token = getattr(d, "token", None)  # TCP callers need one since issue 5
        rc, out, err = cli.run("--url", proxy.url, *(["--token", token] if token else []),
                               "logs", "-f", "--json", sid, timeout=300,
                               env={"STOCKADE_SOCKET": ""})
    finally:
        proxy.close()
    expect(rc == 0, "logs -f ends 0 once the task ended", rc, err)
    expect(proxy.cuts == 1 and "resuming after event" in err, "the stream was cut and resumed",
           proxy.cuts, err)
    import json
    events = [json.loads(x) for x in out.splitlines()]
    seqs = [e["seq"] for e in events]
    expect(seqs == list(range(1, len(seqs) + 1)), "every event once, in order", seqs)
    expect(events[-1]["type"] == "session.state" and events[-1]["state"] == "ended",
           "it followed to the end", events[-1])
    ticks = "".join(e.get("data", "") for e in events if e["type"] == "exec.stdout")
    expect(ticks == "".join(f"tick {i}\n" for i in range(1, 21)), "all output once", ticks)
    rc, out2, _ = cli.run("logs", "--json", "--after", str(seqs[-3]), sid)
    expect([json.loads(x)["seq"] for x in out2.splitlines()] == seqs[-2:], "--after SEQ", out2)
    print(f"resume ok: {len(seqs)} events over {proxy.connections} connections, one cut")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def case_cp(cli, tmp):
    rc, sid, err = cli.run("sessions", "new", "--wait", "--timeout", "300")
    sid = sid.strip()
    expect(rc == 0 and ids_in(sid) == [sid], "sessions new --wait prints an id", rc, sid, err)
    blob = os.path.join(tmp, "blob.bin")
    with open(blob, "wb") as f:
        f.write(bytes(range(256)) * 64 + os.urandom(1 << 20))
    tree = os.path.join(tmp, "tree")
    os.makedirs(os.path.join(tree, "a", "b"))
    for rel, data in (("top.txt", b"top\n"), ("a/b/deep.bin", b"\x00\xff" * 1000)):
        with open(os.path.join(tree, rel), "wb") as f:
            f.write(data)
    rc, _, err = cli.run("cp", blob, f"{sid}:in/blob.bin")
    expect(rc == 0, "cp upload", rc, err)
    rc, _, err = cli.run("cp", tree, f"{sid}:tree")
    expect(rc == 0, "cp upload of a folder", rc, err)
    rc, out, err = cli.run("exec", sid, "--", "sh", "-c",
                           "sha256sum in/blob.bin; cat tree/top.txt; wc -c < tree/a/b/deep.bin")
    expect(rc == 0 and out.split()[0] == sha(blob) and "top\n2000\n" in out,
           "the guest sees the same bytes", rc, out, err)
    rc, _, err = cli.run("exec", sid, "--", "no-such-program")
    expect(rc == 127 and "no such program" in err, "exec of a missing program exits 127", rc, err)
    back = os.path.join(tmp, "back.bin")
    rc, _, err = cli.run("cp", f"{sid}:in/blob.bin", back)
    expect(rc == 0 and sha(back) == sha(blob), "cp download is byte-exact", rc, err)
    rc, _, err = cli.run("sessions", "rm", sid)
    expect(rc == 0, "sessions rm", rc, err)
    rc, _, err = cli.run("cancel", "--wait", sid)
    ws = os.path.join(tmp, "ws")
    rc, out, err = cli.run("cp", f"{sid}:", ws)
    expect(rc == 0 and sha(os.path.join(ws, "in", "blob.bin")) == sha(blob) and
           sha(os.path.join(ws, "tree", "a", "b", "deep.bin")) ==
           sha(os.path.join(tree, "a", "b", "deep.bin")), "the whole workspace comes back",
           rc, out, err)
    rc, _, err = cli.run("cp", f"{sid}:", ws)
    expect(rc == 126 and "not empty" in err, "cp into a non-empty folder is refused", rc, err)
    print(f"cp ok: {os.path.getsize(blob)} bytes both ways, a folder, the workspace")


def case_doctor(cli, tmp):
    missing = os.path.join(tmp, "no-libvirt", "libvirt-sock")
    rc, out, err = cli.run("doctor", "--libvirt-socket", missing)
    expect(rc == 1, "doctor exits 1 on a FAIL", rc, out, err)
    line = next((x for x in out.splitlines() if x.startswith("FAIL") and " libvirtd " in x), "")
    expect(missing in line, "the libvirtd line names the missing socket", out)
    expect("fix: start it: systemctl start libvirtd" in out, "and says what to do", out)
    expect(re.search(r"(?m)^FAIL +virtlogd", out), "virtlogd beside it is missing too", out)
    expect(re.search(r"(?m)^OK +daemon", out), "the daemon itself answers", out)
    rc, out2, _ = cli.run("doctor", env={"STOCKADE_LIBVIRT_SOCKET": missing})
    expect(rc == 1 and missing in out2, "STOCKADE_LIBVIRT_SOCKET does the same", out2)
    rc, out3, _ = cli.run("doctor")
    expect(re.search(r"(?m)^OK +libvirtd", out3), "with the real libvirtd: OK", out3)
    print("doctor ok: a missing libvirt socket is a FAIL with its fix")


def case_usage(cli, tmp):
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    open(os.path.join(full, "x"), "w").close()
    big = os.path.join(tmp, "big")
    os.makedirs(big)
    with open(os.path.join(big, "huge.bin"), "wb") as f:
        f.truncate(40 << 20)
    cases = [
        (["run"], "no command: stockade run [OPTIONS] -- CMD"),
        (["run", "--timeout", "abc", "--", "true"], "--timeout wants whole seconds"),
        (["run", "--download", full, "--", "true"], "is not empty: remove it or choose another"),
        (["run", "--upload", big, "--", "true"], "over the cap of 32 MiB per file"),
        (["run", "--upload", os.path.join(tmp, "nope"), "--", "true"], "No such file"),
        (["exec", "Bad/Id", "--", "ls"], "must be a session id"),
        (["cp", "a", "b"], "exactly one side must be ID:PATH"),
        (["frobnicate"], "unknown verb"),
        (["sessions", "ls", "--limit", "0"], "--limit wants 1..500"),
        (["logs", "-f"], "one session or task id is needed"),
        (["--socket", "/a", "--url", "http://b", "pool"], "exclude each other: choose one"),
        (["sesions", "ls"], "unknown verb 'sesions'; did you mean 'sessions'?"),
        (["tenants", "lss"], "unknown sub-command 'lss'; did you mean 'ls'?"),
        (["tokens", "revok", "tok_x"], "did you mean 'revoke'?"),
        (["run", "--tiemout", "5", "--", "true"], "unknown option --tiemout; did you mean --timeout?"),
        (["tenants", "rm", "--cancel-sesions", "x"], "did you mean --cancel-sessions?"),
        (["sessions", "ls", "-a"], "unknown option -a"),  # -a is logs' --after only
        (["tokens", "create"], "whose token?"),
        (["tokens", "revoke", "ten_x"], "is not a token id"),
    ]
    loose = os.path.join(tmp, "loose.token")
    with open(loose, "w") as f:
        f.write("stk_" + "0" * 64 + "\n")
    os.chmod(loose, 0o644)
    empty = os.path.join(tmp, "empty.token")
    open(empty, "w").close()
    os.chmod(empty, 0o600)
    cases += [(["--token-file", loose, "sessions", "ls"], "mode 0644"),
              (["--token-file", empty, "sessions", "ls"], "is empty")]
    for args, want in cases:
        rc, out, err = cli.run(*args)
        expect(rc == 126 and want in err, f"stockade {' '.join(args)} -> 126, '{want}'", rc, err)
    rc, _, err = cli.run("sessions", "ls", env={"STOCKADE_TOKEN_FILE": loose})
    expect(rc == 126 and "STOCKADE_TOKEN_FILE" in err and "chmod 600" in err,
           "STOCKADE_TOKEN_FILE open to others is refused, naming the fix", rc, err)
    print(f"usage ok: {len(cases) + 1} bad command lines exit 126 naming the fix")


def case_tenants(cli, tmp):
    # The daemon under test has the admin API: a 404 here is a failure,
    # never a reason to skip the tenant checks.
    rc, out, err = cli.run("tenants", "ls")
    expect(rc == 0, "tenants ls", rc, err)
    rc, out, err = cli.run("tenants", "create", "cli-test")
    expect(rc == 0 and "token" in out and "shown only this once" in err, "tenants create", out, err)
    tid = re.search(r"(?m)^id +(\S+)$", out).group(1)
    rc, out, err = cli.run("quota", "cli-test", "--max-sessions", "3", "--max-timeout-s", "60")
    expect(rc == 0 and tid in out, "quota set, the tenant named by its name", rc, out, err)
    rc, out, err = cli.run("quota", tid)
    expect(rc == 0 and re.search(r"max_sessions +3", out), "quota shows what was set", out, err)
    rc, out, err = cli.run("quota", "cli-test", "--max-sessions", str(1 << 60))
    expect(rc == 1 and "max_sessions must be" in err,
           "a value the daemon refuses (400) is a refusal (1), not bad usage", rc, err)
    rc, out, err = cli.run("usage", tid)
    expect(rc == 0 and "sessions.open" in out, "usage", out, err)
    rc, _, err = cli.run("usage", "ten_doesnotexist")
    expect(rc == 1 and "not support tenants" not in err, "an unknown tenant is just not found", err)
    print("tenants ok: create, quota, usage; by name or id")
    return tid


def tcp(d, *args, token=None, token_file=None, env=None):
    """stockade over the daemon's TCP port (tokens matter there), no socket."""
    pre = ["--url", f"http://127.0.0.1:{d.port}"]
    pre += ["--token", token] if token else []
    pre += ["--token-file", token_file] if token_file else []
    extra = {"STOCKADE_SOCKET": ""}
    extra.update(env or {})
    return Cli(d).run(*pre, *args, env=extra)


def secret_file(tmp, name, token):
    path = os.path.join(tmp, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, (token + "\n").encode())
    os.close(fd)
    return path


def case_tokens(cli, d, tmp):
    rc, tok, err = cli.run("tokens", "create", "cli-test")
    tok_id = re.search(r"tok_[a-z2-7]{26}", err)
    expect(rc == 0 and re.fullmatch(r"e2b_[0-9a-f]{64}\n", tok) and tok_id and
           "only time it is shown" in err, "tokens create: the token alone on stdout", rc, tok, err)
    tok, tok_id = tok.strip(), tok_id.group(0)
    good = secret_file(tmp, "good.token", tok)
    bad = secret_file(tmp, "bad.token", "stk_" + "0" * 64)
    rc, out, err = tcp(d, "sessions", "ls", token_file=good)
    expect(rc == 0, "the new token authenticates, read from --token-file", rc, err)
    # which token is sent: the first set of --token, --token-file, STOCKADE_TOKEN, _FILE
    order = [
        ({"token": tok, "token_file": bad}, 0, "--token beats --token-file"),
        ({"token": "stk_" + "1" * 64, "token_file": good}, 1, "--token beats --token-file"),
        ({"token_file": good, "env": {"STOCKADE_TOKEN": "stk_" + "2" * 64}}, 0,
         "--token-file beats STOCKADE_TOKEN"),
        ({"env": {"STOCKADE_TOKEN": tok, "STOCKADE_TOKEN_FILE": bad}}, 0,
         "STOCKADE_TOKEN beats STOCKADE_TOKEN_FILE"),
        ({"env": {"STOCKADE_TOKEN_FILE": good}}, 0, "STOCKADE_TOKEN_FILE alone"),
        ({"env": {"STOCKADE_TOKEN_FILE": bad}}, 1, "a wrong token from STOCKADE_TOKEN_FILE"),
    ]
    for kw, want, what in order:
        rc, _, err = tcp(d, "sessions", "ls", **kw)
        expect(rc == want, f"{what}: exit {want}", rc, err)
    rc, out, err = cli.run("tokens", "ls", "cli-test")
    expect(rc == 0 and tok_id in out and "stk_" not in out, "tokens ls: ids, never tokens",
           out, err)
    rc, out, err = cli.run("--json", "tokens", "ls")
    import json
    listed = json.loads(out)["tokens"]
    expect(rc == 0 and any(t["id"] == tok_id and t["tenant_name"] == "cli-test" for t in listed)
           and all("token" not in t and "hash" not in t for t in listed) and
           any(t["tenant"] == "default" for t in listed), "tokens ls of every tenant", out)
    rc, out, err = cli.run("tokens", "revoke", tok_id)
    expect(rc == 0 and f"{tok_id} revoked" in out, "tokens revoke", rc, out, err)
    rc, _, err = tcp(d, "sessions", "ls", token_file=good)
    expect(rc == 1 and "HTTP 401" in err, "a revoked token is refused", rc, err)
    rc, out, err = cli.run("tokens", "ls", "cli-test")
    expect(rc == 0 and re.search(rf"(?m)^{tok_id} .* \d\d:\d\d:\d\d$", out), "revoked time shown", out)
    rc, admin, err = cli.run("tokens", "create", "--admin")
    expect(rc == 0 and "operator token" in err, "tokens create --admin", rc, err)
    rc, out, err = tcp(d, "tenants", "ls", token=admin.strip())
    expect(rc == 0 and "cli-test" in out, "the operator token opens the admin API", rc, err)
    print("tokens ok: create (stdout: the token alone), ls (no secrets), revoke (then 401), "
          "--admin; --token > --token-file > STOCKADE_TOKEN > STOCKADE_TOKEN_FILE")


def case_tenants_rm(cli, d, tmp):
    import json
    rc, out, err = cli.run("--json", "tenants", "create", "rm-test")
    made = json.loads(out)
    tok = secret_file(tmp, "rm.token", made["token"])
    rc, sid, err = tcp(d, "sessions", "new", "--wait", "--timeout", "300", token_file=tok)
    sid = sid.strip()
    expect(rc == 0 and ids_in(sid) == [sid], "a session of the tenant", rc, sid, err)
    rc, _, err = tcp(d, "exec", sid, "--", "sh", "-c", "echo kept > kept.txt", token_file=tok)
    expect(rc == 0, "the tenant's session writes a file", rc, err)
    rc, out, err = cli.run("tenants", "rm", "rm-test")
    expect(rc == 1 and "1 session(s) not ended" in err and "--cancel-sessions" in err,
           "tenants rm refused while a session is live", rc, out, err)
    rc, _, err = tcp(d, "sessions", "get", sid, token_file=tok)
    expect(rc == 0, "a refused removal changed nothing", rc, err)
    rc, out, err = cli.run("tenants", "rm", made["id"], "--cancel-sessions")
    expect(rc == 0 and "1 token(s) revoked, 1 session(s) cancelled" in out,
           "tenants rm --cancel-sessions (by id)", rc, out, err)
    rc, _, err = tcp(d, "sessions", "ls", token_file=tok)
    expect(rc == 1 and "HTTP 401" in err, "the removed tenant's token is refused", rc, err)
    rc, _, err = cli.run("logs", "-f", sid)  # an operator follows it to its end
    rc, out, err = cli.run("--json", "sessions", "get", sid)
    got = json.loads(out)
    expect(got["state"] == "ended" and got["end_reason"] == "tenant_removed",
           "the session ended tenant_removed", got)
    ws = os.path.join(tmp, "rm-ws")
    rc, _, err = cli.run("cp", f"{sid}:", ws)
    expect(rc == 0 and open(os.path.join(ws, "kept.txt")).read() == "kept\n",
           "its files were salvaged", rc, err)
    rc, out, err = cli.run("usage", "rm-test")
    expect(rc == 0 and "removed_at" in out and "reservations.charged" in out,
           "a removed tenant's usage, by its name", rc, out, err)
    rc, out, _ = cli.run("tenants", "ls")
    rc2, out2, _ = cli.run("tenants", "ls", "--removed")
    expect("rm-test" not in out and "rm-test" in out2, "ls hides it; ls --removed shows it",
           out, out2)
    rc, out, err = cli.run("tenants", "create", "rm-test")
    expect(rc == 0, "the name is free again", rc, err)
    rc, _, err = cli.run("tenants", "rm", "default")
    expect(rc == 1 and "cannot be removed" in err, "the built-in tenant stays", rc, err)
    print("tenants rm ok: refused with a live session, then cancelled it (tenant_removed, files "
          "salvaged), token refused, usage kept, name free again")


def main():
    tmp = tempfile.mkdtemp(prefix="stockade-cli-it.")
    t0 = time.time()
    try:
        case_usage(Cli(), tmp)
        with Daemon(pools=PY_POOL) as d:
            d.wait_ready()
            print(f"daemon ready after {time.time() - t0:.0f} s")
            cli = Cli(d)
            case_exit_codes(cli, tmp)
            case_sigint(cli, tmp)
            case_resume(cli, d, tmp)
            case_cp(cli, tmp)
            case_doctor(cli, tmp)
            case_tenants(cli, tmp)
            case_tokens(cli, d, tmp)
            case_tenants_rm(cli, d, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"integration_cli ok in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
