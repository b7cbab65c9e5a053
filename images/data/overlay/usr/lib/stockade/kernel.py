"""Stockade's code kernel: one stateful Python interpreter per code context (issue 18).

The host starts this as an ordinary exec of the session (stdin open), so the runner's
cgroups, output caps, signals and the session's lifetime apply to it unchanged. A pool with
code_kernel starts one in each guest before the guest is saved (runner.proto Prestart): it
imports numpy, pandas and matplotlib there, says "ready", and waits; the session's first
context adopts it (Exec.adopt), and the runner then writes one header before any request:
"STOCKADE-ADOPT <n>\n" and n bytes, the cwd and the exec's environment as NUL-ended
strings, which the kernel takes as its own; it then reseeds what the preload seeded at import
(see reseed(): every clone of a snapshot holds the same generator states, and hash()'s secret,
which no running interpreter can change: API.md "Code"). A restored guest's Prepare may first send
"STOCKADE-WARMUP\n" (runner.proto Prepare.warm_parked): the kernel then runs a cell of its own
through the whole request path, silently, so that under TCG the emulator has translated that
path again before a session waits on it. Otherwise it reads one JSON request per line on
stdin and answers with JSON lines on its original stdout:

  in:  {"run": N, "code": "...", "timeout_ms": T (0 = none), "env": {"NAME": "value"}}
  out: {"type": "ready", "pid": P}                       once, when it can take cells
       {"run": N, "type": "stdout"|"stderr", "text": "..."}   as the cell prints
       {"run": N, "type": "result", "main": bool, "data": {mime: value}}
       {"run": N, "type": "error", "name": "...", "value": "...", "traceback": "..."}
       {"run": N, "type": "done", "execution_count": K}

Why not Jupyter: ipykernel needs ZeroMQ sockets, a connection file and a client speaking
the Jupyter wire protocol (HMAC-signed multipart messages) inside the guest, plus tornado,
pyzmq and their dependencies in the image; a stateful exec with JSON lines gives the same
semantics (globals, execution count, rich results, interrupts) in one small file, and
keeps every byte on the channel the host already parses, bounds and records.

A cell is read as IPython reads one (what agents and E2B's SDK tests send): leading blank
lines dropped and the first line's indentation taken off every line that starts with it;
`!cmd` runs a shell command (its output is the cell's stdout; `x = !cmd` keeps its lines;
`{expr}` and `$name` are expanded as IPython does), `%cd`, `%pwd`, `%env`, `%pip` and
`%%bash`, `%%sh`, `%%writefile [-a] FILE` work, and any other magic is a UsageError that names
it. Only a cell that is not Python as it stands is rewritten, so no valid program changes
meaning.

The cell's globals persist between runs. The last statement, when it is an expression, is
evaluated and rendered (text/plain by repr; text/html, image/png, image/svg+xml,
text/markdown, text/latex, application/json by the _repr_*_ methods; a matplotlib Figure as
PNG). Figures left open by a cell come back as further results and are closed. SIGINT (the
host's interrupt) and the run's timeout (SIGALRM) raise inside the cell: the run ends with
an error and the context keeps its globals. Output written at the file-descriptor level
(subprocesses, C code) leaves through the exec's stderr, which the host attributes to the
running cell. Everything here is the workload's side: the host trusts none of it.
"""
import ast
import base64
import importlib
import io
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import traceback

TEXT_MAX = 1 << 20  # one rendered representation; the host caps again
ADOPT = b"STOCKADE-ADOPT "
WARMUP = b"STOCKADE-WARMUP\n"
WARMUP_CELL = "x = 41\nprint(end='')\nx + 1"
ADOPT_MAX = 1 << 20  # the runner's header: cwd and environment (256 KiB of it at most)
# imported before "ready": in a pre-started kernel, once per snapshot instead of per session
PRELOAD = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot")
MIMES = (("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
         ("image/svg+xml", "_repr_svg_"), ("image/png", "_repr_png_"),
         ("text/latex", "_repr_latex_"), ("application/json", "_repr_json_"))

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("MPLCONFIGDIR", "/tmp/matplotlib-%d" % os.getuid())
PROTO = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
os.dup2(2, 1)  # fd-level writes to stdout must never corrupt the protocol


def send(msg):
    PROTO.write(json.dumps(msg, ensure_ascii=False) + "\n")
    PROTO.flush()


class Stream(io.TextIOBase):
    """sys.stdout / sys.stderr during a cell: whole lines leave as they are printed."""

    def __init__(self, name):
        self.name, self.run, self.buf = name, 0, ""

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        self.buf += s
        cut = self.buf.rfind("\n")
        if cut >= 0 or len(self.buf) > 65536:
            cut = cut + 1 if cut >= 0 else len(self.buf)
            text, self.buf = self.buf[:cut], self.buf[cut:]
            send({"run": self.run, "type": self.name, "text": text})
        return len(s)

    def flush(self):
        if self.buf:
            text, self.buf = self.buf, ""
            send({"run": self.run, "type": self.name, "text": text})


def on_alarm(signo, frame):
    raise TimeoutError("the cell ran longer than its timeout")


def clip(s):
    return s if len(s) <= TEXT_MAX else s[:TEXT_MAX] + "\n[truncated]"


def figure_png(fig):
    out = io.BytesIO()
    fig.savefig(out, format="png", bbox_inches="tight")
    return base64.b64encode(out.getvalue()).decode("ascii")


def render(value):
    data = {}
    if type(value).__name__ == "Figure" and hasattr(value, "savefig"):
        data["image/png"] = figure_png(value)
    for mime, meth in MIMES:
        fn = getattr(value, meth, None)
        if mime in data or not callable(fn) or isinstance(value, type):
            continue
        try:
            got = fn()
        except Exception:
            continue
        if got is None:
            continue
        if isinstance(got, tuple):
            got = got[0]
        if mime == "application/json":
            data[mime] = got
        elif isinstance(got, bytes):
            data[mime] = base64.b64encode(got).decode("ascii")
        elif isinstance(got, str):
            data[mime] = clip(got)
    data["text/plain"] = clip(repr(value))
    return data


def open_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    figs = [plt.figure(n) for n in plt.get_fignums()]
    plt.close("all")
    return figs


class UsageError(Exception):
    """IPython's name for a magic used wrongly or not known."""


def dedent_cell(code):
    """IPython's cleanup of a cell: leading blank lines dropped, then the first line's leading
    whitespace taken off every line that starts with it (others are left as they are)."""
    lines = code.splitlines(keepends=True)
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return ""
    indent = lines[0][:len(lines[0]) - len(lines[0].lstrip(" \t"))]
    if not indent:
        return "".join(lines)
    return "".join(l[len(indent):] if l.startswith(indent) else l for l in lines)


VAR_RE = re.compile(r"\$\$|\$([A-Za-z_][A-Za-z0-9_]*)|\{([^{}]+)\}")


def expand(cmd, ns):
    """IPython's expansion of a shell escape: {expr} and $name from the cell's globals, $$ a
    literal $; what does not evaluate is left as written."""
    def one(m):
        if m.group(0) == "$$":
            return "$"
        try:
            if m.group(1):
                return str(ns[m.group(1)]) if m.group(1) in ns else m.group(0)
            return str(eval(m.group(2), ns))
        except Exception:
            return m.group(0)
    return VAR_RE.sub(one, cmd)


def shell(cmd, capture=False):
    """Runs cmd with /bin/sh -c, its output (stderr merged, as a notebook shows it) written to
    the cell's stdout as it comes, or returned as lines; the exit status lands in _exit_code."""
    p = subprocess.Popen(["/bin/sh", "-c", cmd], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    kept = []
    for raw in iter(p.stdout.readline, b""):
        text = raw.decode("utf-8", errors="replace")
        if capture:
            kept.append(text.rstrip("\n"))
        else:
            sys.stdout.write(text)
    p.stdout.close()
    code = p.wait()
    return kept if capture else code


def magic_line(name, arg, ns):
    if name == "cd":
        target = os.path.expanduser(arg.strip() or "~")
        try:
            os.chdir(target)
        except OSError as e:
            raise UsageError("%%cd: %s: %s" % (target, e.strerror))
        print(os.getcwd())
    elif name == "pwd":
        return os.getcwd()
    elif name == "env":
        arg = arg.strip()
        if not arg:
            return dict(os.environ)
        k, sep, v = arg.replace("=", " ", 1).partition(" ") if "=" in arg else arg.partition(" ")
        if not sep:
            return os.environ.get(k)
        os.environ[k] = v.strip()
        print("env: %s=%s" % (k, v.strip()))
    elif name in ("pip", "conda"):
        ns["_exit_code"] = shell("%s -m pip %s" % (shlex.quote(sys.executable), arg)
                                 if name == "pip" else "conda " + arg)
    elif name == "matplotlib":  # figures come back as PNG results already (Agg)
        pass
    elif name in ("ls", "cat", "mkdir", "rm", "cp", "mv"):  # IPython's shell aliases
        ns["_exit_code"] = shell(name + " " + arg)
    else:
        raise UsageError("Line magic function `%%%s` not found." % name)
    return None


def magic_cell(name, arg, body, ns):
    if name in ("bash", "sh"):
        if not shutil.which(name):
            raise UsageError("%%%%%s: %s is not in this image" % (name, name))
        ns["_exit_code"] = shell("%s -c %s" % (name, shlex.quote(body)))
    elif name == "writefile":
        words = shlex.split(arg)
        append = "-a" in words
        files = [w for w in words if w != "-a"]
        if len(files) != 1:
            raise UsageError("%%writefile wants one file name")
        with open(os.path.expanduser(files[0]), "a" if append else "w") as f:
            f.write(body)
        print("%s %s" % ("Appending to" if append else "Writing", files[0]))
    else:
        raise UsageError("Cell magic `%%%%%s` not found." % name)


ESCAPE_RE = re.compile(r"^([ \t]*)(?:([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*)?(!!?|%)(.*)$")


def rewrite_escapes(code):
    """A cell that is not Python as it stands: lines that start (after their indentation) with
    `!cmd`, `%magic` or `name = !cmd` become calls of this kernel's helpers. IPython decides
    on logical lines; this decides on physical ones, so an escape inside a triple-quoted
    string of an invalid cell is taken as one (as a notebook would refuse the cell anyway)."""
    out = []
    for line in code.split("\n"):
        m = ESCAPE_RE.match(line)
        if not m or (m.group(3) == "%" and not re.match(r"[A-Za-z]", m.group(4))):
            out.append(line)
            continue
        indent, target, kind, rest = m.groups()
        if kind == "%":
            name, _, arg = rest.partition(" ")
            call = "__stockade_magic__(%r, %r)" % (name, arg)
        else:  # "x = !cmd" and "!!cmd" give the output's lines, "!cmd" shows them
            call = "__stockade_shell__(%r, %s)" % (rest, bool(target or kind == "!!"))
        out.append(indent + (target + " = " if target else "") + call)
    return "\n".join(out)


def parse_cell(code, ns):
    """The cell as a module, after IPython's cleanup; a %% cell magic runs here and leaves
    nothing to execute."""
    code = dedent_cell(code)
    if code.startswith("%%"):
        first, _, body = code.partition("\n")
        name, _, arg = first[2:].partition(" ")
        magic_cell(name.strip(), arg, body, ns)
        return ast.parse("", "<cell>", "exec")
    try:
        return ast.parse(code, "<cell>", "exec")
    except SyntaxError:
        rewritten = rewrite_escapes(code)
        if rewritten == code:
            raise
    ns["__stockade_shell__"] = lambda cmd, capture: (
        shell(expand(cmd, ns), True) if capture else ns.__setitem__(
            "_exit_code", shell(expand(cmd, ns))))
    ns["__stockade_magic__"] = lambda name, arg: magic_line(name, expand(arg, ns), ns)
    return ast.parse(rewritten, "<cell>", "exec")


def run_cell(req, ns):
    tree = parse_cell(req.get("code", ""), ns)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), ns)
    value = eval(compile(last, "<cell>", "eval"), ns) if last is not None else None
    results = [{"main": False, "data": {"image/png": figure_png(f), "text/plain": repr(f)}}
               for f in open_figures() if f is not value]
    if value is not None:
        ns["_"] = value
        results.append({"main": True, "data": render(value)})
    return results


def report_error(run, exc):
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # drop the kernel's own frames: the user's cell starts at "<cell>"
    lines = [tb[0]] + [t for t in tb[1:] if "kernel.py" not in t]
    send({"run": run, "type": "error", "name": type(exc).__name__, "value": str(exc),
          "traceback": "".join(lines)})


def preload():
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # an image without it: the cell's own import says so
            pass


def reseed():
    """An adopted kernel was started before its guest was saved: every guest restored from that
    snapshot holds the same generator states, so two sessions' first cells would draw the same
    numbers. Reseeds, from the guest's CRNG (re-keyed with the host's entropy at Hello), what
    the preload seeded at import: random's module instance and numpy's global RandomState
    (pandas draws from it too); tempfile's name sequence is made anew on first use (none is
    made by the preload, but matplotlib falls back to mkdtemp when its config dir is not
    writable), and multiprocessing's authkey, should a preload ever import it, is replaced.
    images_data_runs checks that the preload leaves no other generator. Not reseedable: hash()'s
    secret (str and bytes), the stack-protector canary and the address-space layout, fixed when
    the process started; a pool with code_kernel = fresh gives each session its own."""
    random.seed(os.urandom(32))
    npr = sys.modules.get("numpy.random")
    if npr is not None:
        # an array seeds all of MT19937's state through init_by_array (an int: 32 bits only)
        npr.seed(sys.modules["numpy"].frombuffer(os.urandom(32), dtype="uint32"))
    tmp = sys.modules.get("tempfile")
    if tmp is not None:
        tmp._name_sequence = None
    mp = sys.modules.get("multiprocessing.process")
    if mp is not None:
        mp.current_process().authkey = os.urandom(32)


def adopt(stdin, line):
    """Takes the runner's adopt header: the exec's cwd and environment become the kernel's,
    and the generators seeded before the snapshot are reseeded."""
    reseed()
    try:
        n = int(line[len(ADOPT):])
    except ValueError:
        return
    body = stdin.read(min(max(n, 0), ADOPT_MAX))
    parts = body.split(b"\0")
    env = [p.partition(b"=") for p in parts[1:] if b"=" in p]
    os.environb.clear()
    os.environb.update({k: v for k, _, v in env})
    try:
        os.chdir(parts[0])
    except OSError:
        pass


def warm():
    """One cell through parse, exec, render and encode, in a namespace of its own, and the
    reseed the adoption will run (harmless twice: both draw from the guest's CRNG, which
    Prepare re-keyed); sends nothing."""
    try:
        reseed()
        ns = {"__name__": "__warmup__", "__builtins__": __builtins__}
        results = run_cell({"code": WARMUP_CELL}, ns)
        json.dumps([dict(r, run=0, type="result") for r in results], ensure_ascii=False)
    except Exception:
        pass


def serve():
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    preload()
    out, err = Stream("stdout"), Stream("stderr")
    sys.stdout, sys.stderr = out, err
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    count = 0
    send({"type": "ready", "pid": os.getpid()})
    stdin = sys.stdin.buffer
    while True:
        raw = stdin.readline()
        if not raw:
            return
        if raw.startswith(ADOPT):
            adopt(stdin, raw)
            continue
        if raw == WARMUP:
            warm()
            continue
        try:
            req = json.loads(raw.decode("utf-8", errors="replace"))
            run = int(req.get("run", 0))
        except (ValueError, AttributeError, TypeError):
            continue
        count += 1
        out.run = err.run = run
        saved = dict(os.environ)
        try:
            os.environ.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
            timeout = max(0, int(req.get("timeout_ms") or 0)) / 1000.0
            # interrupts and the timer reach the cell only: between cells they are ignored,
            # so the protocol lines are never cut short
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                results = run_cell(req, ns)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            out.flush()
            err.flush()
            for r in results:
                send(dict(r, run=run, type="result"))
        except BaseException as exc:  # SystemExit and KeyboardInterrupt end the cell only
            out.flush()
            err.flush()
            report_error(run, exc)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        send({"run": run, "type": "done", "execution_count": count})


if __name__ == "__main__":
    serve()
