#!/usr/bin/env python3
"""Golden outputs of the `stockade` verbs, against a real daemon (tests/lib/stockade_fixture.py).

Each case runs one command and compares `$ command`, its stdout, stderr and exit status,
normalised (ids, times, durations, paths, counters: tests/integration/cli_helpers.py), with
tests/golden/cli/<case>.txt. STOCKADE_REGEN_GOLDEN=1 rewrites the files: review the diff.
The cases run in order on one daemon; later ones use the tasks earlier ones made.
"""
import difflib
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from cli_helpers import PY_POOL, SAMPLE, Cli, Daemon, normalise  # noqa: E402

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli")
REGEN = os.environ.get("STOCKADE_REGEN_GOLDEN") == "1"


class Golden:
    def __init__(self):
        self.failures, self.seen = [], set()

    def check(self, name, cli, args, replace=(), extra=None, post=None, **kw):
        rc, out, err = cli.run(*args, **kw)
        shown = ["stockade"] + [a if len(a) < 60 else a[:57] + "..." for a in args]
        text = (f"$ {' '.join(shown)}\n--- stdout\n{out}--- stderr\n{err}--- exit {rc}\n")
        if extra:
            text += extra()
        text = normalise(text, replace)
        if post:
            text = post(text)
        self.compare(name, text)
        return rc, out, err

    def compare(self, name, text):
        self.seen.add(name)
        path = os.path.join(GOLDEN_DIR, f"{name}.txt")
        if REGEN:
            os.makedirs(GOLDEN_DIR, exist_ok=True)
            with open(path, "w", newline="") as f:
                f.write(text)
            return
        try:
            with open(path, newline="") as f:
                want = f.read()
        except OSError:
            want = None
        if want != text:
            self.failures.append(name)
            diff = difflib.unified_diff((want or "").splitlines(True), text.splitlines(True),
                                        f"{name}.txt (golden)", f"{name} (this run)")
            print("".join(repr(x)[1:-1] + "\n" if x.strip("\n") != x.rstrip() else x
                          for x in diff), file=sys.stderr)


def listing(root):
    def walk():
        lines = []
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for f in sorted(files):
                p = os.path.join(d, f)
                lines.append(f"{os.path.relpath(p, root)} {os.path.getsize(p)}")
        return "--- files\n" + "".join(x + "\n" for x in lines)
    return walk


def squeeze(text):
    """Tables pad columns to their widest cell, which varies with what was normalised."""
    return re.sub(r"(?m)(\S) {2,}(?=\S)", r"\1  ", text)


def counts_out(text):
    """pool / image tables: counts, sizes, kernels, hashes and times vary by run and build."""
    text = re.sub(r"(?m)^(accel: )\w+.*$", r"\1<ACCEL>", text)
    text = re.sub(r"(?m)^why: .*$", "why:   <REASON>", text)
    text = re.sub(r"(?m)^guests: \d+ restores, \d+ restore failures, \d+ prepare failures, \d+ wedged, "
                  r"\d+ broken$",
                  "guests: <COUNTS>", text)
    text = re.sub(r"(?m)^probe: (none this run|\d+ runs?, \d+ failed.*)$", "probe: <PROBE>", text)
    text = re.sub(r"(?m)^extraction: (waiting|starting|up|failed)"
                  r"( \(last launch ([\d.]+ s|<DUR>)\))?$",
                  "extraction: <EXTRACTION>", text)

    def row(m):
        cells = re.split(r" {2,}", m.group(0))
        if len(cells) == 8 and cells[2] in ("ok", "BROKEN"):  # image; ORIGIN (the last) stays
            return "  ".join(cells[:3] + ["<X>"] * 4 + cells[7:])
        return "  ".join(cells[:1] + ["<X>"] * (len(cells) - 1))
    return squeeze(re.sub(r"(?m)^(python|minimal|data) .*$", row, text))


def seq_out(text):
    return re.sub(r"(?m)^(last_seq +)\d+$", r"\1<N>", text)


def accel_out(text):
    return re.sub(r"\(accel (kvm|tcg)", "(accel <ACCEL>", text)


def static_cases(g, nodaemon):
    for verb in ["", "run", "exec", "code", "sessions", "logs", "cancel", "cp", "pool", "image",
                 "doctor", "tenants", "tokens", "quota", "usage", "hosts", "drain", "version"]:
        g.check(f"help_{verb or 'main'}", nodaemon, [verb, "--help"] if verb else ["--help"])
    usage = {
        "usage_no_verb": [],
        "usage_unknown_verb": ["frobnicate"],
        "usage_run_no_command": ["run"],
        "usage_run_timeout": ["run", "--timeout", "0", "--", "true"],
        "usage_drain_timeout": ["drain", "--timeout", "0"],
        "usage_drain_wait_timeout": ["drain", "--wait", "--timeout", "5"],
        "usage_run_env": ["run", "-e", "1X=2", "--", "true"],
        "usage_cp_both_local": ["cp", "a", "b"],
        "usage_socket_and_url": ["--socket", "/x", "--url", "http://127.0.0.1:1", "version"],
        "usage_logs_no_id": ["logs"],
        "usage_sessions_no_sub": ["sessions"],
    }
    for name, args in usage.items():
        g.check(name, nodaemon, args)
    g.check("unreachable_sessions_ls", nodaemon, ["sessions", "ls"])
    g.check("unreachable_version", nodaemon, ["version"])


def run_cases(g, cli, tmp, build):
    rep = [(tmp, "<TMP>"), (cli.socket, "<SOCK>"), (build, "<BUILD>"), (SAMPLE, "<SAMPLE>")]
    out = os.path.join(tmp, "out")
    _, _, err = g.check("run_sample", cli, ["run", "--upload", SAMPLE, "--download", out, "--",
                                             "python3", "clean.py", "data.csv"],
                        replace=rep, extra=listing(out))
    sample_id = re.search(r"ses_[a-z2-7]{26}", err).group(0)
    _, _, err = g.check("run_exit7", cli, ["run", "--no-download", "--", "python3", "-c",
                                          "import sys; print('seven'); sys.exit(7)"],
                        replace=rep)
    exit7_id = re.search(r"ses_[a-z2-7]{26}", err).group(0)
    g.check("run_not_found", cli, ["run", "--no-download", "--", "nosuchprogram"], replace=rep)
    g.check("run_bad_pool", cli, ["run", "-p", "nosuch", "--", "true"], replace=rep)
    g.check("sessions_get", cli, ["sessions", "get", sample_id], replace=rep, post=seq_out)
    g.check("sessions_ls", cli, ["sessions", "ls", "--limit", "3"], replace=rep, post=squeeze)
    g.check("logs_exit7", cli, ["logs", exit7_id], replace=rep)
    g.check("logs_output", cli, ["logs", "--output", sample_id], replace=rep)
    g.check("logs_after", cli, ["logs", "--after", "100000", exit7_id], replace=rep)
    g.check("cancel_ended", cli, ["cancel", sample_id], replace=rep)
    g.check("cp_file_stdout", cli, ["cp", f"{sample_id}:clean.csv", "-"], replace=rep)
    g.check("cp_missing", cli, ["cp", f"{sample_id}:nope.txt", "-"], replace=rep)
    g.check("pool", cli, ["pool"], replace=rep, post=counts_out)
    g.check("version", cli, ["version"], replace=rep, post=accel_out)
    images = os.environ.get("STOCKADE_IMAGE_DIR") or os.path.join(build, "images")
    g.check("image_ls", cli, ["image", "ls", "--image-dir", images],
            replace=[(images, "<BUILD>/images")] + rep, post=counts_out)
    rc, _, err = cli.run("tenants", "ls")
    if "does not support tenants yet" in err:  # a daemon before issue 5
        g.check("tenants_unsupported_ls", cli, ["tenants", "ls"], replace=rep)
        g.check("tenants_unsupported_quota", cli, ["quota", "ten_x", "--max-sessions", "2"],
                replace=rep)
        g.check("tenants_unsupported_usage", cli, ["usage", "ten_x"], replace=rep)
    else:  # the admin API is there: integration_cli checks it; these goldens do not apply
        assert rc == 0, err
        g.seen |= {"tenants_unsupported_ls", "tenants_unsupported_quota",
                   "tenants_unsupported_usage"}


def main():
    g = Golden()
    static_cases(g, Cli())
    tmp = tempfile.mkdtemp(prefix="stockade-golden.")
    try:
        with Daemon(pools=PY_POOL) as d:
            d.wait_ready()
            run_cases(g, Cli(d), tmp, d.build)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stale = {f[:-4] for f in os.listdir(GOLDEN_DIR) if f.endswith(".txt")} - g.seen \
        if os.path.isdir(GOLDEN_DIR) else set()
    if stale:
        print(f"golden files no case produces (remove them): {sorted(stale)}", file=sys.stderr)
    if g.failures or stale:
        print(f"FAIL: {len(g.failures)} golden(s) differ: {g.failures}", file=sys.stderr)
        return 1
    print(f"{'regenerated' if REGEN else 'ok'}: {len(g.seen)} goldens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
