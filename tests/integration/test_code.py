#!/usr/bin/env python3
"""Stateful code contexts on the native API (issue 18): real daemon, real data-image guests.

    test_code.py [clones|promises]    (no argument: everything; clones: only the clones'
                                       check; promises: only promises_code.py's rows)

One session of the data pool; every case of the issue without the SDK: x = 41 then x + 1
gives the main result text 42; print lines arrive as separate code.stdout events while the
cell runs (by causality: the cell prints its next line only once the test has read the last
one and put a file saying so); a matplotlib figure comes back as image/png that decodes
as a PNG; a DataFrame as text/html; 1/0 as ZeroDivisionError; a while-True cell with
timeout_ms ends as TimeoutError and the context still has x; two contexts keep separate
globals; restart clears them; an interrupt ends a running cell with KeyboardInterrupt.
The pool pre-starts the kernel (code_kernel, the default of the data pool): the first context
adopts it (exec.started says adopted, pandas is imported already, and it has the session's
cwd and environment), a second context starts its own. A cell writing result lines nested
2 040 and 65 deep to the kernel's protocol file (issue 25) has them dropped as
code.line_dropped; the daemon lives, the session's events read twice, the context keeps x.
Then API.md's code promises that need a kernel, as table rows (promises_code.py, issue 31):
16 runs in a context (the one served included), 8 contexts, a 33rd result dropped.
Then, on the same daemon, the E2B Code Interpreter SDK's checks (test_e2b_code.py: one data
template boot for both; the same deep cell through runCode).

Clones (issue 25, finding 3): every guest of the pool is cloned from one template (the
default guest_memory), and so was every adopted kernel. The first cells of two sessions must
differ in every generator the kernel reseeds on adoption (random's, numpy's global state,
tempfile's names); hash()'s secret cannot be reseeded in a running interpreter: the adopted
kernels share it (printed, the documented limit), while a kernel started in its session (a
second context, or every context of a pool with code_kernel = fresh) has its own (checked
against the adopted kernels': one fresh start, the costly part under TCG).
"""
import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon, skip  # noqa: E402
import promises  # noqa: E402
import promises_code  # noqa: E402
from test_e2b_code import DEEP_CELL, E2B_CONF, check_deep_events, json_depth, sdk_checks  # noqa: E402,E501

POOLS = {"data": dict(warm=1, slots=2, memory_mib=1024, code_kernel=True)}


def adopted(d, sid, exec_id):
    started = [ev for ev in d.events(sid) if ev["type"] == "exec.started" and
               ev.get("exec_id") == exec_id]
    if len(started) != 1:
        raise AssertionError(f"exec {exec_id}: exec.started events {started}")
    return started[0]["adopted"]


def run(d, sid, code, context=None, timeout_ms=None, wait=600, language=None):
    body = {"code": code}
    if context:
        body["context"] = context
    if language:
        body["language"] = language
    if timeout_ms:
        body["timeout_ms"] = timeout_ms
    r = d.post(f"/v1/sessions/{sid}/code", body)
    out = {"stdout": [], "stderr": [], "results": [], "error": None, "ctx": r["context"],
           "exec_id": r["exec_id"], "after": r["after"]}
    for ev in d.events(sid, after=r["after"], follow=True, timeout=wait):
        if not ev["type"].startswith("code.") or ev.get("run") != r["run"]:
            continue
        t = ev["type"][5:]
        if t in ("stdout", "stderr"):
            out[t].append(ev)
        elif t == "result":
            out["results"].append(ev)
        elif t == "error":
            out["error"] = ev
        elif t == "done":
            out["count"] = ev["execution_count"]
            return out
    gone = d.proc.poll()
    raise AssertionError(f"run {r} never finished (the daemon "
                         f"{'is up' if gone is None else f'is gone, status {gone}'})")


# A cell that waits on the test (a file the test puts) gives up after this long: "never",
# not a speed (the test puts it as soon as it reads the event it waits for).
STEP_WAIT_S = 120
STEPPED_CELL = """import os, time
for i in range({n}):
    print('line', i, flush=True)
    t = time.monotonic()
    while not os.path.exists(f'go{{i}}'):
        if time.monotonic() - t > {wait}:
            raise RuntimeError(f'the host never read line {{i}} while the cell ran')
        time.sleep(0.05)"""


def run_stepped(d, sid, n):
    """Print lines stream as printed, by causality (issue 31): the cell prints line k, then
    waits for a file go<k> the test puts once it has read line k's code.stdout event. Output
    the daemon held back (until the cell ended, or until a batch filled) would leave the cell
    waiting for a file that never comes, and it fails. Returns (the lines read, the run)."""
    r = d.post(f"/v1/sessions/{sid}/code", {"code": STEPPED_CELL.format(n=n, wait=STEP_WAIT_S)})
    texts, err = [], None
    for ev in d.events(sid, after=r["after"], follow=True, timeout=STEP_WAIT_S + 60):
        if not ev["type"].startswith("code.") or ev.get("run") != r["run"]:
            continue
        if ev["type"] == "code.stdout":
            texts.append(ev["data"])
            k = len(texts) - 1  # answered only after it is read, never ahead
            status, _, _ = d.request("PUT", f"/v1/sessions/{sid}/files/go{k}", raw=b"go")
            assert status in (200, 201, 204), f"put go{k}: {status}"
        elif ev["type"] == "code.error":
            err = ev
        elif ev["type"] == "code.done":
            return texts, err
    raise AssertionError(f"run {r['run']} never finished (lines {texts})")


def main_text(out):
    mains = [r["data"]["text/plain"] for r in out["results"] if r["main"]]
    return mains[0] if mains else None


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


# What a cell draws first; "hash('x')" is the limit (not reseedable), the rest must differ.
FIRST_CELL = """import json, random, tempfile, numpy
print(json.dumps({"random.getrandbits(64)": random.getrandbits(64),
                  "random.random()": random.random(),
                  "numpy.random.randint(2**31)": int(numpy.random.randint(2**31)),
                  "numpy.random.standard_normal()": float(numpy.random.standard_normal()),
                  "tempfile name": next(tempfile._get_candidate_names()),
                  "hash('x')": hash("x")}))"""
NOT_RESEEDABLE = ("hash('x')",)


def first_draws(d, sid, context=None):
    out = run(d, sid, FIRST_CELL, context=context)
    check(out["error"] is None, f"the first cell ran ({out['error']})")
    return json.loads("".join(e["data"] for e in out["stdout"])), out["exec_id"]


def scenario_clones(d):
    """Two sessions cloned from the pool's template: their first cells draw different numbers;
    a kernel started in a session has a hash secret of its own."""
    draws, fresh = [], None
    for i in range(2):
        d.wait(d.pool_full, 600, "a full pool")
        sid = d.post("/v1/sessions", {"pool": "data", "timeout_s": 1800})["id"]
        d.wait_state(sid, "running")
        got, exec_id = first_draws(d, sid)
        check(adopted(d, sid, exec_id) is True, f"session {i + 1} adopted the pre-started kernel")
        draws.append(got)
        print(f"session {i + 1}: {got}", flush=True)
        if i == 0:  # a kernel started in the session: what code_kernel = fresh gives every context
            ctx = d.post(f"/v1/sessions/{sid}/contexts", {})["context"]
            fresh, exec_id = first_draws(d, sid, context=ctx)
            check(adopted(d, sid, exec_id) is False, "the second context is a fresh kernel")
        d.request("DELETE", f"/v1/sessions/{sid}")
    for key in draws[0]:
        values = [x[key] for x in draws]
        if key in NOT_RESEEDABLE:
            print(f"{key}: {'the same' if len(set(values)) == 1 else 'different'} in the two "
                  f"adopted kernels ({values}): the template's secret (API.md, Code)")
            continue
        check(len(set(values)) == 2, f"{key} differs in the two sessions' first cells ({values})")
    key = NOT_RESEEDABLE[0]
    check(fresh[key] not in [x[key] for x in draws],
          f"a kernel started in its session has its own hash secret ({fresh[key]})")


def promise_rows(d, sid):
    """API.md's code promises that need a kernel (promises_code.py: runs waiting, contexts, a
    33rd result), as table rows on this session (issue 31)."""
    failures = promises_code.run_all(d, sid, promises.run_rows, promises.native_error)
    check(not failures, "the code promises hold" + "".join(f"\n  {f}" for f in failures))


def ipython_reading(d, sid):
    """Cells as IPython reads them (issue 33): common indentation, shell escapes, magics."""
    i = run(d, sid, "\n    a = x + 1\n    if a:\n        a += 1\n    a")
    check(i["error"] is None and main_text(i) == "43",
          f"an indented cell runs as IPython dedents it ({i['error'] and i['error']['value']})")
    sh = run(d, sid, "!echo shell $x {x + 1}")
    check(sh["error"] is None and "".join(e["data"] for e in sh["stdout"]) == "shell 41 42\n",
          f"!cmd runs, $name and {{expr}} expanded, its output is stdout ({sh['stdout']})")
    kept = run(d, sid, "lines = !printf 'a\\nb\\n'\nlines")
    check(main_text(kept) == "['a', 'b']", f"x = !cmd keeps the lines ({main_text(kept)!r})")
    cd = run(d, sid, "%cd /tmp\n%pwd")
    check(main_text(cd) == "'/tmp'", f"%cd then %pwd ({main_text(cd)!r})")
    run(d, sid, "%cd /workspace")
    wf = run(d, sid, "%%writefile magic.txt\nwritten by a cell magic\n")
    back = run(d, sid, "open('magic.txt').read()")
    check(wf["error"] is None and main_text(back) == repr("written by a cell magic\n"),
          f"%%writefile writes the cell's body ({main_text(back)!r})")
    u = run(d, sid, "%nosuchmagic 1")
    check(u["error"] and u["error"]["name"] == "UsageError" and "%nosuchmagic" in
          u["error"]["value"], f"an unknown magic is a UsageError naming it ({u['error']})")
    m = run(d, sid, "mod = 7 % 4\nmod")
    check(main_text(m) == "3", "a valid cell is never rewritten (7 % 4)")


def languages(d, sid):
    """Issue 33: javascript and bash contexts beside python's, each language's default context
    made on its first run; typescript refused naming what is served."""
    js = run(d, sid, "const n = 41\nconsole.log('from node')\nn + 1", language="javascript")
    check(js["error"] is None and main_text(js) == "42" and
          [e["data"] for e in js["stdout"]] == ["from node\n"],
          f"javascript: printed and the last expression ({main_text(js)!r}, {js['error']})")
    again = run(d, sid, "await Promise.resolve(n + 1)", language="js")
    check(main_text(again) == "42" and again["ctx"] == js["ctx"],
          f"the same javascript context keeps n; top-level await ({main_text(again)!r})")
    sh = run(d, sid, "cd /tmp && Y=7\necho bash $BASH_VERSION | cut -c1-6", language="bash")
    back = run(d, sid, "pwd; echo $Y; false", language="bash")
    check([e["data"] for e in sh["stdout"]] == ["bash 5\n"] and
          "".join(e["data"] for e in back["stdout"]) == "/tmp\n7\n" and
          main_text(back) == "exit status 1",
          f"bash keeps cd and variables; a failing last command is its status "
          f"({sh['stdout']}, {back['stdout']}, {main_text(back)!r})")
    py = run(d, sid, "x")
    check(main_text(py) == "41", "python's default context is untouched by the others")
    listed = {c["language"]: c["context"] for c in d.get(f"/v1/sessions/{sid}/contexts")["contexts"]}
    check(listed == {"python": py["ctx"], "javascript": js["ctx"], "bash": sh["ctx"]},
          f"each language its own default context, listed with its language ({listed})")
    status, _, payload = d.request("POST", f"/v1/sessions/{sid}/code",
                                   {"code": "1", "language": "typescript"})
    check(status == 400 and b"python, javascript (or js) and bash" in payload,
          f"typescript -> 400 naming what is served ({status} {payload[:200]!r})")
    for lang in ("javascript", "bash"):
        d.request("DELETE", f"/v1/sessions/{sid}/contexts/{listed[lang]}")


def main():
    images = os.environ.get("STOCKADE_IMAGE_DIR") or os.path.join(
        os.environ.get("STOCKADE_BUILD_DIR", ""), "images")
    if not os.path.exists(os.path.join(images, "data", "manifest.json")):
        skip("the data image is not built")
    if sys.argv[1:] == ["promises"]:
        with Daemon(pools=POOLS) as d:
            d.wait(d.pool_full, 300, "a full pool")
            sid = d.post("/v1/sessions", {"pool": "data", "timeout_s": 1800})["id"]
            d.wait_state(sid, "running")
            promise_rows(d, sid)
        print("PASS")
        return
    if sys.argv[1:] == ["clones"]:
        with Daemon(pools=POOLS) as d:
            d.wait_ready()
            scenario_clones(d)
        print("PASS")
        return
    # a pool asked for a kernel its image lacks: the kernel fails, the pool still serves
    with Daemon(pools=dict(POOLS, python=dict(warm=1, slots=1, memory_mib=512, code_kernel=True)),
                extra_conf=E2B_CONF) as d:
        d.wait_ready()
        kernels = {p["name"]: p["code_kernel"] for p in d.get("/v1/pool")["pools"]}
        check(kernels == {"data": "on", "python": "failed"},
              f"GET /v1/pool: data's snapshots hold a code kernel, python's failed ({kernels})")
        check("the code kernel did not start" in d.tail_log(400), "the log says why")
        psid = d.post("/v1/sessions", {"pool": "python"})["id"]
        d.wait_state(psid, "running")
        eid = d.post(f"/v1/sessions/{psid}/exec", {"argv": ["echo", "still-serves"]})["exec_id"]
        out = []
        for ev in d.events(psid, follow=True, timeout=300):
            if ev.get("exec_id") == eid and ev["type"] == "exec.stdout":
                out.append(ev.get("data", ""))
            if ev.get("exec_id") == eid and ev["type"] in ("exec.exited", "exec.failed"):
                break
        check("".join(out) == "still-serves\n", f"the python pool still serves ({out})")
        d.request("DELETE", f"/v1/sessions/{psid}")
        sid = d.post("/v1/sessions", {"pool": "data", "timeout_s": 1800,
                                      "env": {"STOCKADE_TEST_VAR": "from-session"}})["id"]
        d.wait_state(sid, "running")
        t0 = time.monotonic()
        a = run(d, sid, "x = 41")
        print(f"first run (adopted kernel + x = 41): {time.monotonic() - t0:.2f} s")
        check(a["error"] is None and a["results"] == [], "x = 41 has no result")
        check(adopted(d, sid, a["exec_id"]) is True, "the first context adopted the pre-started kernel")
        e = run(d, sid, "import os, sys\n"
                "('pandas' in sys.modules, os.getcwd(), os.environ.get('STOCKADE_TEST_VAR'), "
                "os.environ.get('HOME'))")
        check(main_text(e) == "(True, '/workspace', 'from-session', '/workspace')",
              f"pandas imported before, the session's cwd and environment ({main_text(e)})")
        b = run(d, sid, "x + 1")
        check(main_text(b) == "42", f"x + 1 -> 42 (got {main_text(b)!r})")
        ipython_reading(d, sid)
        languages(d, sid)
        texts, err = run_stepped(d, sid, 3)
        check(err is None and texts == ["line 0\n", "line 1\n", "line 2\n"],
              f"print lines stream as printed: each read before the next was printed ({texts},"
              f" {err and err.get('value')})")
        m = run(d, sid, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\nplt.show()")
        pngs = [r["data"]["image/png"] for r in m["results"] if "image/png" in r["data"]]
        check(m["error"] is None and pngs and
              base64.b64decode(pngs[0])[:8] == b"\x89PNG\r\n\x1a\n", "matplotlib figure -> PNG")
        f = run(d, sid, "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})")
        html = [r["data"].get("text/html", "") for r in f["results"] if r["main"]]
        check(html and "<table" in html[0], "DataFrame -> text/html")
        z = run(d, sid, "1/0")
        check(z["error"] and z["error"]["name"] == "ZeroDivisionError" and
              "1/0" not in z["error"]["value"] and "<cell>" in z["error"]["traceback"],
              "1/0 -> ZeroDivisionError with a traceback")
        w = run(d, sid, "while True:\n    pass", timeout_ms=2000)
        check(w["error"] and w["error"]["name"] == "TimeoutError", "while True -> TimeoutError")
        check(main_text(run(d, sid, "x")) == "41", "the context still has x after the timeout")
        ctx2 = d.post(f"/v1/sessions/{sid}/contexts", {})["context"]
        t0 = time.monotonic()
        n = run(d, sid, "x", context=ctx2)
        print(f"first run of a second context (its own kernel): {time.monotonic() - t0:.2f} s")
        check(n["error"] and n["error"]["name"] == "NameError", "a second context has no x")
        check(adopted(d, sid, n["exec_id"]) is False, "the second context started its own kernel")
        run(d, sid, "y = 'two'", context=ctx2)
        check(main_text(run(d, sid, "y", context=ctx2)) == "'two'", "the second context keeps y")
        check(run(d, sid, "y")["error"]["name"] == "NameError", "the first context has no y")
        d.post(f"/v1/sessions/{sid}/contexts/{ctx2}/restart", {})
        r = run(d, sid, "y", context=ctx2)
        check(r["error"] and r["error"]["name"] == "NameError", "restart clears the globals")
        lst = d.get(f"/v1/sessions/{sid}/contexts")["contexts"]
        check(len(lst) == 2, f"two contexts listed ({lst})")
        # an interrupt ends a running cell; the context lives on. Sent once the cell says it
        # runs (its first line), not after a guessed delay.
        body = {"code": "import time\nprint('looping', flush=True)\nwhile True: time.sleep(0.1)",
                "context": ctx2}
        r = d.post(f"/v1/sessions/{sid}/code", body)
        for ev in d.events(sid, after=r["after"], follow=True, timeout=STEP_WAIT_S):
            if ev["type"] == "code.stdout" and ev.get("run") == r["run"]:
                break
        d.post(f"/v1/sessions/{sid}/contexts/{ctx2}/interrupt", {})
        names = [ev["name"] for ev in d.events(sid, after=r["after"])
                 if ev["type"] == "code.error" and ev.get("run") == r["run"]]
        deadline = time.monotonic() + 120
        while not names and time.monotonic() < deadline:
            time.sleep(0.5)
            names = [ev["name"] for ev in d.events(sid, after=r["after"])
                     if ev["type"] == "code.error" and ev.get("run") == r["run"]]
        check(names == ["KeyboardInterrupt"], f"interrupt -> KeyboardInterrupt ({names})")
        d.request("DELETE", f"/v1/sessions/{sid}/contexts/{ctx2}")
        check(len(d.get(f"/v1/sessions/{sid}/contexts")["contexts"]) == 1, "delete removes it")
        # lines nested past the bound, written by the cell itself (issue 25); the following
        # run() reads them as they are rendered, check_deep_events() twice more
        deep = run(d, sid, DEEP_CELL)
        depths = [json_depth(r["data"].get("application/json")) for r in deep["results"]]
        check(deep["error"] is None and depths == [64], f"the deep cell ran: {depths}")
        check_deep_events(d, sid, deep["after"])
        check(main_text(run(d, sid, "x")) == "41", "the session and its context live on")
        promise_rows(d, sid)
        d.request("DELETE", f"/v1/sessions/{sid}")
        d.wait_state(sid, "ended", timeout=300)
        scenario_clones(d)
        sdk_checks(d)
    print("PASS")


if __name__ == "__main__":
    main()
