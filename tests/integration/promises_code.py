"""The code routes' promises that need a real kernel (hostd/api/API.md, "Code"), one row
each; see promises.py. They run inside integration_code (test_code.py), on its data-pool
session, so they cost no guest of their own: runs in a context, contexts a session,
a cell's 33rd result.
"""

from promises import Answer, Row

API = "hostd/api/API.md"
QUEUED = 16     # "at most 16 a context, the one being served included"
CONTEXTS = 8    # "at most 8 contexts a session"
RESULTS = 32    # a 33rd result is dropped
WAIT_S = 300    # "never", not a speed: the test lets the blocker go as soon as it is served

BLOCKER = """import os, time
print('served', flush=True)
t = time.monotonic()
while not os.path.exists('unblock') and time.monotonic() - t < %d:
    time.sleep(0.05)""" % WAIT_S

# 33 result lines written to the kernel's protocol file, as DEEP_CELL writes its lines.
RESULTS_CELL = r"""
import __main__, sys
for i in range(%d):
    __main__.PROTO.write('{"run": %%d, "type": "result", "main": false, '
                         '"data": {"text/plain": "r%%d"}}\n' %% (sys.stdout.run, i))
__main__.PROTO.flush()
""" % (RESULTS + 1)


class Ctx:
    def __init__(self, d, sid):
        self.d, self.sid = d, sid
        self.made = []    # contexts the rows made, removed after
        self.last = None  # the last run queued
        self.note = None

    def post(self, path, body):
        st, hdrs, payload = self.d.request("POST", f"/v1/sessions/{self.sid}{path}", body=body)
        return Answer(st, payload, hdrs)


def block(ctx):
    """A run of the default context that is being served (it printed) and waits."""
    r = ctx.d.post(f"/v1/sessions/{ctx.sid}/code", {"code": BLOCKER})
    for ev in ctx.d.events(ctx.sid, after=r["after"], follow=True, timeout=WAIT_S):
        if ev["type"] == "code.stdout" and ev.get("run") == r["run"]:
            return r
    raise AssertionError("the blocking run was never served")


def queue_up_to(n):
    def send(ctx):
        a = None
        for _ in range(n):
            a = ctx.post("/code", {"code": "pass"})
            if a.status != 202:
                return a
            ctx.last = a.json()
        return a
    return send


def unblock(ctx):
    """Lets the blocker end and waits for the last queued run to be done."""
    d = ctx.d
    st, _, _ = d.request("PUT", f"/v1/sessions/{ctx.sid}/files/unblock", raw=b"go")
    assert st in (200, 201), st
    if ctx.last:
        for ev in d.events(ctx.sid, after=ctx.last["after"], follow=True, timeout=WAIT_S):
            if ev["type"] == "code.done" and ev.get("run") == ctx.last["run"]:
                return
        raise AssertionError("the queued runs never ended")


def contexts_up_to(n):
    def send(ctx):
        have = len(ctx.d.get(f"/v1/sessions/{ctx.sid}/contexts")["contexts"])
        a = None
        for _ in range(n - have):
            a = ctx.post("/contexts", {})
            if a.status != 201:
                return a
            ctx.made.append(a.json()["context"])
        return a
    return send


def drop_contexts(ctx):
    for c in ctx.made:
        ctx.d.request("DELETE", f"/v1/sessions/{ctx.sid}/contexts/{c}")
    ctx.made = []


def results_run(ctx):
    a = ctx.post("/code", {"code": RESULTS_CELL})
    if a.status != 202:
        return a
    r = a.json()
    results, dropped = 0, []
    for ev in ctx.d.events(ctx.sid, after=r["after"], follow=True, timeout=WAIT_S):
        if ev["type"] == "code.result" and ev.get("run") == r["run"]:
            results += 1
        elif ev["type"] == "code.line_dropped":
            dropped.append(ev.get("reason"))
        elif ev["type"] == "code.done" and ev.get("run") == r["run"]:
            break
    ctx.note = (results, dropped)
    return a


def results_check(ctx, a):
    results, dropped = ctx.note
    if results != RESULTS or len(dropped) != 1 or "CODE_RESULTS_MAX" not in dropped[0]:
        return f"{results} results, dropped {dropped}: promised {RESULTS} and one dropped"
    return None


def S(quote):
    return (API, quote)


# Each row's send may leave state the next one relies on: run them in this order.
QUEUE_ROWS = [
    Row(f"{QUEUED - 1} runs waiting behind the one served ({QUEUED} in all): 202 each",
        S("Runs of a\ncontext are served in order (at most 16 a context, the one being served "
          "included)"),
        queue_up_to(QUEUED - 1), 202),
    Row(f"a run past {QUEUED} in all: 429, saying so",
        S("(at most 16 a context, the one being served included)"),
        lambda ctx: ctx.post("/code", {"code": "pass"}), 429, "quota_exceeded",
        "at most 16 runs in a context"),
]

CONTEXT_ROWS = [
    Row(f"contexts up to {CONTEXTS}: 201", S("at most 8 contexts a session"),
        contexts_up_to(CONTEXTS), 201),
    Row(f"a context past {CONTEXTS}: 429", S("at most 8 contexts a session"),
        lambda ctx: ctx.post("/contexts", {}), 429, "quota_exceeded"),
]

RESULT_ROWS = [
    Row(f"a cell of {RESULTS + 1} results: {RESULTS} code.result, the last code.line_dropped",
        S("or a 33rd result"), results_run, 202, check=results_check),
]


def run_all(d, sid, run_rows, error_of):
    """The three tables on a running data session; returns the failures."""
    ctx = Ctx(d, sid)
    failures = []
    block(ctx)
    try:
        failures += run_rows("API.md, code runs queued", QUEUE_ROWS, ctx, error_of)
    finally:
        unblock(ctx)
    try:
        failures += run_rows("API.md, code contexts", CONTEXT_ROWS, ctx, error_of)
    finally:
        drop_contexts(ctx)
    failures += run_rows("API.md, code results", RESULT_ROWS, ctx, error_of)
    return failures
