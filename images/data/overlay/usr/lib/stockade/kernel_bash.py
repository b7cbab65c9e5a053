"""Stockade's bash code kernel: one stateful bash per code context whose language is "bash"
(issue 33). It speaks kernel.py's line protocol unchanged (read that header); the host starts
it as an ordinary exec of the session, so the runner's cgroups, caps and signals apply.

State is the shell's own: a cell is written to a file and sourced by one long-lived bash, so
`cd`, variables, functions and aliases persist from cell to cell, and a syntax error ends the
cell, not the shell. The cell's output is the shell's stdout and stderr (pipes this kernel
reads and forwards as they come); the cell is over when the shell writes its status to a third
pipe after the `source`: every byte the cell's commands wrote before they ended is in the pipes
by then. A request's env is exported for that cell only, then restored (unset if it was
unset), as E2B's bash kernel does. SIGINT (the host's interrupt) and the run's timeout send
SIGINT to the cell's commands (the shell traps it and goes on); a cell that makes the shell
exit (`exit`, `exec`) ends with an error ShellExited, and the next cell gets a fresh shell. A
non-zero status is not an error (a shell's last command failing is ordinary output), as in
Jupyter's bash_kernel it would be: the status is the run's result instead, text/plain, when
it is not 0. Everything here is the workload's side: the host trusts none of it.
"""
import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile

TEXT_MAX = 1 << 20  # one message's text; the host caps again
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
PROTO = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
os.dup2(2, 1)  # fd-level writes to stdout must never corrupt the protocol


def send(msg):
    PROTO.write(json.dumps(msg, ensure_ascii=False) + "\n")
    PROTO.flush()


class Interrupted(Exception):
    def __init__(self, name, value):
        super().__init__(value)
        self.name, self.value = name, value


class Shell:
    """One bash, its stdout/stderr pipes and its status pipe (fd 3 in the shell)."""

    def __init__(self, cells_dir):
        self.cells_dir = cells_dir
        status_r, status_w = os.pipe()
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, pass_fds=(status_w,), start_new_session=True)
        os.close(status_w)
        self.status = status_r
        # the status pipe as fd 3; SIGINT stops the cell's commands, not bash
        self.command(f"exec 3>&{status_w} {status_w}>&-\ntrap : INT\n")

    def command(self, text):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def interrupt(self):
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        os.close(self.status)


def cell_script(path, env):
    """What the shell runs for one cell: the env for this cell only, the cell, its status."""
    out = []
    for i, (name, value) in enumerate(sorted(env.items())):
        if not NAME.match(name):
            raise Interrupted("ValueError", f"not an environment variable name: {name!r}")
        out.append(f'if [ "${{{name}+x}}" ]; then __stk_old{i}=${name}; __stk_had{i}=1; '
                   f'else __stk_had{i}=; fi; export {name}={shlex.quote(str(value))}')
    out.append(f"source {shlex.quote(path)}; __stk_rc=$?")
    for i, name in enumerate(sorted(env)):
        out.append(f'if [ "$__stk_had{i}" ]; then {name}=$__stk_old{i}; else unset {name}; fi')
    out.append('printf "%s\\n" "$__stk_rc" >&3')
    return "\n".join(out) + "\n"


def forward(run, fd, stream, pending):
    data = os.read(fd, 65536)
    if not data:
        return False
    text = (pending.pop(stream, b"") + data)
    # a UTF-8 sequence cut by the read waits for its end
    cut = len(text)
    while cut > 0 and cut > len(text) - 4 and (text[cut - 1] & 0xC0) == 0x80:
        cut -= 1
    if cut > 0 and text[cut - 1] >= 0xC0:
        cut -= 1
    else:
        cut = len(text)
    if cut < len(text):
        pending[stream] = text[cut:]
    body = text[:cut].decode("utf-8", errors="replace")
    for i in range(0, len(body), TEXT_MAX):
        send({"run": run, "type": stream, "text": body[i:i + TEXT_MAX]})
    return True


SIGNALLED = []  # (name, value) of an interrupt or a timeout not yet acted on
WAKE_R, WAKE_W = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)


def on_signal(signo, frame):
    SIGNALLED.append(("KeyboardInterrupt", "interrupted") if signo == signal.SIGINT
                     else ("TimeoutError", "the cell ran over its timeout"))


def drain(shell, run, outs, pending):
    """What the cell wrote before its status is in the pipes by now: take it all."""
    while outs:
        ready, _, _ = select.select(list(outs), [], [], 0)
        if not ready:
            return
        for fd in ready:
            if not forward(run, fd, outs[fd], pending):
                del outs[fd]


def serve(shell, run, code, timeout_ms, env, count):
    """Runs one cell; returns (status, or None if the shell exited; error or None)."""
    path = os.path.join(shell.cells_dir, f"cell-{count}.sh")
    script = cell_script(path, env)  # may refuse an env name before the shell sees anything
    with open(path, "w", encoding="utf-8") as f:
        f.write(code if code.endswith("\n") else code + "\n")
    SIGNALLED.clear()
    if timeout_ms > 0:
        signal.setitimer(signal.ITIMER_REAL, timeout_ms / 1000)
    outs = {shell.proc.stdout.fileno(): "stdout", shell.proc.stderr.fileno(): "stderr"}
    pending, status, error = {}, b"", None
    try:
        shell.command(script)
        while not status.endswith(b"\n"):
            ready, _, _ = select.select([*outs, shell.status, WAKE_R], [], [])
            if WAKE_R in ready:
                os.read(WAKE_R, 64)
            while SIGNALLED:
                error = error or Interrupted(*SIGNALLED.pop(0))
                shell.interrupt()
            if shell.status in ready:
                chunk = os.read(shell.status, 64)
                if not chunk:
                    break  # the shell exited
                status += chunk
            for fd in [fd for fd in ready if fd in outs]:
                if not forward(run, fd, outs[fd], pending):
                    del outs[fd]
    except BrokenPipeError:
        pass  # the shell exited before it read the cell
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.unlink(path)
    drain(shell, run, outs, pending)
    if not status.endswith(b"\n"):
        return None, error
    return int(status.strip() or b"0"), error


def main():
    signal.set_wakeup_fd(WAKE_W)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGALRM, on_signal)
    cells_dir = tempfile.mkdtemp(prefix="stockade-bash-")
    shell = Shell(cells_dir)
    count = 0
    send({"type": "ready", "pid": os.getpid()})
    for line in sys.stdin:
        try:
            req = json.loads(line)
            run, code = int(req["run"]), str(req["code"])
            timeout_ms, env = int(req.get("timeout_ms") or 0), dict(req.get("env") or {})
        except (ValueError, KeyError, TypeError):
            continue  # the host writes only requests; anything else is not one
        count += 1
        try:
            status, error = serve(shell, run, code, timeout_ms, env, count)
        except Interrupted as e:
            status, error = 0, e
        if status is None:
            shell.close()
            shell = Shell(cells_dir)
            error = error or Interrupted("ShellExited", "the cell made the shell exit; "
                                         "the next cell runs in a new shell")
        if error:
            send({"run": run, "type": "error", "name": error.name, "value": error.value,
                  "traceback": f"{error.name}: {error.value}"})
        elif status:
            send({"run": run, "type": "result", "main": True,
                  "data": {"text/plain": f"exit status {status}"}})
        send({"run": run, "type": "done", "execution_count": count})


if __name__ == "__main__":
    main()
