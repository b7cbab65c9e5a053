#!/usr/bin/env python3
"""E2B Code Interpreter face (issue 18): the real SDK, npm @e2b/code-interpreter@2.8.0, runs
code in a real stockaded's data-image guest through E2B_API_URL and E2B_SANDBOX_URL only.
integration_code (test_code.py) runs these checks on its own daemon, after the native API's
(one data template boot instead of two: CI's time); run alone, this file starts its own.

The SDK is installed with npm into <build>/e2b-ci-sdk once per build (reruns reuse it). The
daemon gets [e2b] (ports it picks itself) and a data pool; the SDK's default template,
code-interpreter-v1, must land there by the default template map. e2b_code_sdk.mjs runs the
steps and prints what the SDK observed as JSON lines; this file checks them: state across
runs (x = 41; x + 1 -> 42), print lines streamed as printed (the second printed only once the first reached
onStdout), a matplotlib PNG (magic bytes), a DataFrame as HTML, 1/0 as ZeroDivisionError, a
while-True cell given up by the SDK's timeoutMs (TimeoutError, then the context still has x),
two contexts with separate globals, restart, delete, the refusals (another language, no
token, a wrong token), and a cell that writes result lines nested 2 040 and 65 deep to the
kernel's protocol file (DEEP_CELL: dropped as code.line_dropped, the daemon lives, the value
nested 64 deep comes whole, the session's events read twice). Skips without Node.js/npm/the registry or the data image (fails under
STOCKADE_MUST_WORK=1).
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon, skip  # noqa: E402
from test_e2b import e2b_ports, install_sdk  # noqa: E402

SDK = "@e2b/code-interpreter"
SDK_VERSION = "2.8.0"
HERE = os.path.dirname(os.path.abspath(__file__))
POOLS = {"data": dict(warm=1, slots=2, memory_mib=1024)}
E2B_CONF = "[e2b]\nenabled = true\napi_port = 0\nenvd_port = 0\ncreate_wait_s = 300\n"
PNG_MAGIC = "89504e470d0a1a0a"
# Issue 25: user code shares the kernel's process, so it can write any line to the kernel's
# protocol file. A result whose application/json nests 2 040 deep, kept and rendered again on
# a 512 KiB connection thread, took the daemon down at every read of the session's events.
# Now lines past CODE_LINE_MAX_DEPTH (66: application/json 64) are dropped; the last
# expression's _repr_json_ at exactly 64 levels goes through the kernel's own path and is kept.
DEEP_CELL = r"""
import __main__, sys
def deep_line(depth):
    value = "[" * depth + "0" + "]" * depth
    return ('{"run": %d, "type": "result", "main": false, "data": {"application/json": %s}}\n'
            % (sys.stdout.run, value))
__main__.PROTO.write(deep_line(2040) + deep_line(65))
__main__.PROTO.flush()
class AtTheBound:
    def _repr_json_(self):
        v = 0
        for _ in range(64):
            v = [v]
        return v
AtTheBound()
"""
DEEP_DROPPED = 2
DEEP_REASON = "nests deeper than 66 levels"


def json_depth(v):
    if isinstance(v, dict):
        v = list(v.values())
    return 1 + max(map(json_depth, v), default=0) if isinstance(v, list) else 0


def check_deep_events(d, sid, after):
    """The session's events after `after`, read twice through the native face: the same both
    times, two code.line_dropped for DEEP_CELL's lines and no result nested past 64."""
    first = list(d.events(sid, after=after))
    second = list(d.events(sid, after=after))
    check(first == second and first, f"{sid}: its events read twice, the same ({len(first)})")
    dropped = [ev["reason"] for ev in first if ev["type"] == "code.line_dropped"]
    check(sum(DEEP_REASON in r for r in dropped) == DEEP_DROPPED,
          f"{sid}: the deep lines are code.line_dropped ({dropped})")
    depths = [json_depth(ev["data"]["application/json"]) for ev in first
              if ev["type"] == "code.result" and "application/json" in ev["data"]]
    check(depths == [64], f"{sid}: one application/json result, 64 deep ({depths})")
    check(d.proc.poll() is None, "the daemon lives")


def run_sdk(d, node, root):
    api, envd = e2b_ports(d)
    for name in ("e2b_code_sdk.mjs", "e2b_steps.mjs"):
        shutil.copy(os.path.join(HERE, name), os.path.join(root, name))
    env = dict(os.environ, E2B_API_URL=f"http://127.0.0.1:{api}",
               E2B_SANDBOX_URL=f"http://127.0.0.1:{envd}", E2B_API_KEY=d.token,
               STOCKADE_DEEP_CELL=DEEP_CELL)
    env.pop("E2B_DOMAIN", None)
    env.pop("E2B_DEBUG", None)
    r = subprocess.run([node, "e2b_code_sdk.mjs"], cwd=root, env=env, capture_output=True,
                       text=True, timeout=1500)
    steps = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            s = json.loads(line)
            steps[s["step"]] = s
            print(line[:2000], flush=True)
    assert r.returncode == 0, f"the SDK script failed ({r.returncode}):\n{r.stderr[-4000:]}"
    return steps


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


def check_runs(s):
    st = s["state"]
    check(st["a"]["error"] is None and st["a"]["results"] == [], f"x = 41: no result ({st['a']})")
    check(st["b"]["text"] == "42" and st["b"]["error"] is None, f"x + 1 -> 42 ({st['b']})")
    check(isinstance(st["b"]["count"], int) and st["b"]["count"] >= 2,
          f"executionCount from number_of_executions ({st['b']['count']})")
    out = s["stdout"]
    lines = out["lines"]
    check([x["line"] for x in lines] == ["one\n", "two\n"] and out["run"]["error"] is None,
          f"onStdout got the prints, 'two' printed only once 'one' had reached it: streamed,"
          f" not at the end ({lines}, {out['run']['error']})")
    check(out["run"]["stdout"] == ["one\n", "two\n"], "execution.logs.stdout has them too")
    plot = s["plot"]
    check(plot["pngMagic"] == PNG_MAGIC and plot["pngBytes"] > 1000,
          f"matplotlib -> a PNG result ({plot['pngMagic']}, {plot['pngBytes']} bytes)")
    check(plot["run"]["error"] is None, "the plot cell raised nothing")
    df = s["dataframe"]
    check(df["html"] is not None and "<table" in df["html"], "DataFrame -> html")
    check(any(r["main"] and "html" in r["formats"] for r in df["run"]["results"]),
          "the DataFrame is the main result with an html format")
    z = s["error"]["run"]["error"]
    check(z is not None and z["name"] == "ZeroDivisionError" and "division by zero" in z["value"]
          and z["traceback"], f"1/0 -> ZeroDivisionError with a traceback ({z})")
    to = s["timeout"]
    check(to["threw"] and to["isTimeout"] and "timed out" in to["message"].lower(),
          f"while True with timeoutMs -> TimeoutError ({to['name']}: {to['message']})")
    check(7.5 <= to["seconds"] < 60, f"given up after its timeoutMs ({to['seconds']:.1f} s)")
    check(to["after"]["text"] == "41" and to["after"]["error"] is None,
          f"the context still has x after the timeout ({to['after']}, {to['afterSeconds']:.1f} s)")


def check_contexts(s):
    c = s["contexts"]
    ctx = c["ctx"]
    check(re.fullmatch(r"[1-9][0-9]*", ctx["id"]) and ctx["language"] == "python"
          and ctx["cwd"] == "/home/user", f"createCodeContext -> {ctx}")
    check(c["noX"]["error"] and c["noX"]["error"]["name"] == "NameError",
          "a second context does not see x")
    # a string's text as E2B's server gives it: without repr's quotes (issue 33)
    check(c["hasY"]["text"] == "two", f"it keeps its own y ({c['hasY']})")
    check(c["defaultNoY"]["error"] and c["defaultNoY"]["error"]["name"] == "NameError",
          "the default context does not see y")
    # the default context (python's), ctx, and javascript's default, which E2B's server starts
    # with every sandbox and lists (issue 33)
    ids = [x["id"] for x in c["listed"]]
    langs = sorted(x["language"] for x in c["listed"])
    check(ctx["id"] in ids and len(ids) == 3 and langs == ["javascript", "python", "python"],
          f"listCodeContexts lists both and javascript's default ({c['listed']})")
    check(c["restarted"]["error"] and c["restarted"]["error"]["name"] == "NameError",
          "restart clears its globals")
    check(ctx["id"] not in [x["id"] for x in c["listedAfter"]], "removeCodeContext removes it")
    check(c["deleted"]["threw"] and c["deleted"]["isNotFound"],
          f"a run in a removed context -> NotFoundError ({c['deleted']})")
    r = s["refusals"]
    check(r["lang"]["threw"] and "400" in r["lang"]["message"],
          f"language r -> 400 ({r['lang']['message']})")
    check(r["noToken"] == 401 and r["badToken"] == 401,
          f"no token / a wrong token -> 401 ({r['noToken']}, {r['badToken']})")
    check_raw_execute(s["rawExecute"])


def check_languages(s):
    """Issue 33: javascript and bash contexts, E2B's cells (defaultKernels, cwd, env_vars)."""
    g = s["languages"]
    check(g["jsHello"]["stdout"] == ["Hello World!\n"], f"js console.log ({g['jsHello']})")
    check(g["jsImport"]["stdout"] == ["function\n"], f"js import declaration ({g['jsImport']})")
    check(g["jsAwait"]["text"] == "Hello World!", f"js top-level await ({g['jsAwait']})")
    check(g["jsState"]["text"] == "42", f"js globals persist across cells ({g['jsState']})")
    check(g["jsRedeclare"]["text"] == "1", f"a const declared again in a cell ({g['jsRedeclare']})")
    check(g["jsCwd"]["text"] == "/home/user", f"js runs in E2B's home ({g['jsCwd']})")
    check(g["jsEnv"]["text"] == "bar" and g["jsEnvAfter"]["text"] == "default",
          f"js env for one run only ({g['jsEnv']}, {g['jsEnvAfter']})")
    e = g["jsError"]["error"]
    check(e and e["name"] == "TypeError" and "<cell" in e["traceback"] and
          "kernel.js" not in e["traceback"], f"a js error: its name, the cell's frames ({e})")
    check(g["jsOwn"]["language"] == "javascript" and g["jsOwnRun"]["text"] == "undefined",
          f"a javascript context of its own has its own globals ({g['jsOwn']}, {g['jsOwnRun']})")
    check(g["bashEnv"]["stdout"] == ["bar\n"] and g["bashEnvAfter"]["stdout"] == ["default\n"],
          f"bash env for one run only ({g['bashEnv']}, {g['bashEnvAfter']})")
    check(g["bashState"]["stdout"] == ["/tmp\n5\n"], f"bash keeps cd and variables ({g['bashState']})")
    check(g["pyBang"]["stdout"] == ["/home/user\n"], f"!pwd in E2B's home ({g['pyBang']})")
    # the SDK's message is the status line alone; the body naming the languages served is
    # checked by promises_e2b.py's row on the raw answer
    check(g["ts"]["threw"] and "400" in g["ts"]["message"],
          f"typescript -> 400 ({g['ts']})")
    listed = g["langsListed"]
    check({"language": "javascript", "cwd": "/home/user"} in listed and
          {"language": "python", "cwd": "/home/user"} in listed,
          f"the default contexts are listed in /home/user ({listed})")


def check_raw_execute(x):
    """Issue 28: what the Python SDK reads off every stdout/stderr line of /execute: an
    integer `timestamp`, Unix epoch in nanoseconds, between the request and its answer (1 s
    of slack: the host clock at ms precision on both sides; the order is the causal check)."""
    out = [l for l in x["lines"] if l["type"] in ("stdout", "stderr")]
    check(x["status"] == 200 and [(l["type"], l["text"]) for l in out] ==
          [("stdout", "out\n"), ("stderr", "err\n")], f"/execute streamed both lines ({x})")
    check(all(l["tsType"] == "number" and l["ts"] and re.fullmatch(r"[1-9][0-9]{18}", l["ts"])
              for l in out), f"each line has an integer timestamp in ns ({out})")
    check(all(x["within"]) and int(out[0]["ts"]) <= int(out[1]["ts"]),
          f"timestamps between request and answer, in order ({out})")


def sdk_checks(d):
    """The SDK's steps against d (a daemon with E2B_CONF and a data pool, ready)."""
    node, root = install_sdk(d.build, SDK, SDK_VERSION, "e2b-ci-sdk")
    steps = run_sdk(d, node, root)
    missing = {"create", "state", "stdout", "plot", "dataframe", "error", "timeout",
               "contexts", "languages", "deep", "refusals", "rawExecute", "killed", "done"} - set(steps)
    assert not missing, f"steps missing: {missing}"
    print(f"created in {steps['create']['seconds']:.1f} s; first run "
          f"{steps['state']['firstSeconds']:.1f} s")
    check_runs(steps)
    check_contexts(steps)
    check_languages(steps)
    deep = steps["deep"]
    check(deep["run"]["error"] is None and deep["jsonDepths"] == [64],
          f"runCode of the deep cell: one json result, 64 deep ({deep['jsonDepths']})")
    check(deep["after"]["text"] == "41", f"the context lives on after it ({deep['after']})")
    k = steps["killed"]
    check(k["threw"] and k["isTimeout"] and
          k["message"].startswith("The sandbox was killed while the request was in progress"),
          f"runCode of a sandbox killed mid-cell rejects as E2B's does ({k})")
    sid = steps["create"]["id"]
    killed = d.wait_state(f"ses_{sid}", "ended", timeout=300)
    check(killed["end_reason"] == "closed", "kill closed the session")
    # the cell given up by timeoutMs ended by the interrupt, not by running on
    names = [ev.get("name") for ev in d.events(f"ses_{sid}") if ev["type"] == "code.error"]
    check("KeyboardInterrupt" in names,
          f"the abandoned cell was interrupted (code.error names: {names})")
    check_deep_events(d, f"ses_{sid}", 0)


def main():
    images = os.environ.get("STOCKADE_IMAGE_DIR") or os.path.join(
        os.environ.get("STOCKADE_BUILD_DIR", ""), "images")
    if not os.path.exists(os.path.join(images, "data", "manifest.json")):
        skip("the data image is not built")
    with Daemon(pools=POOLS, extra_conf=E2B_CONF) as d:
        d.wait_ready()
        sdk_checks(d)
    print("PASS")


if __name__ == "__main__":
    main()
