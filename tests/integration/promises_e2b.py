"""The E2B faces' promises (hostd/e2b/README.md), one row each; see promises.py.

Control-plane rows need no guest; envd and code-interpreter rows need one sandbox (made by
the driver: ctx.sbx), whose token opens the envd face; the v1 default-timeout row makes one
more sandbox and kills it. Bodies over a cap are announced by Content-Length and never sent.
"""
import json
import uuid
from datetime import datetime, timezone

from promises import Answer, Row, head_only, http_request

README = "hostd/e2b/README.md"
MIB = 1 << 20


def S(quote):
    return (README, quote)


def when(ts):
    """An E2B time ("2026-12-03T13:36:08.123Z" or with more digits) in seconds."""
    ts = ts.rstrip("Z")
    if "." in ts:
        head, frac = ts.split(".")
        ts = head + "." + frac[:6]
    else:
        ts += ".0"
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


def api(method, path, body=None, key=True):
    def send(ctx):
        h = {"Content-Type": "application/json"} if body is not None else {}
        if key:
            h["X-API-KEY"] = ctx.d.token
        return http_request(ctx.api, method, path.format(id=ctx.sbx_id),
                            json.dumps(body).encode() if body is not None else None, h)
    return send


def envd_headers(ctx, **extra):
    h = {"E2b-Sandbox-Id": ctx.sbx_id, "X-Access-Token": ctx.sbx["envdAccessToken"],
         "Connect-Protocol-Version": "1"}
    h.update(extra)
    return h


def rpc(path, msg):
    def send(ctx):
        return http_request(ctx.envd, "POST", path, json.dumps(msg).encode(),
                            envd_headers(ctx, **{"Content-Type": "application/json"}))
    return send


def code(method, path, body=None, raw=None):
    def send(ctx):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        h = envd_headers(ctx, **{"E2b-Sandbox-Port": "49999"})
        if data is not None:
            h["Content-Type"] = "application/json"
        return http_request(ctx.envd, method, path, data, h)
    return send


def multipart(n_parts, head_bytes=None):
    """POST /files with n_parts small files; head_bytes: the first part's header block (from
    after its delimiter line to its blank line, both CRLFs excluded) padded to that size."""
    def send(ctx):
        boundary = "b" + uuid.uuid4().hex
        out = b""
        for i in range(n_parts):
            lines = [f"Content-Disposition: form-data; name=\"file\"; filename=\"mp/f{i}.txt\"",
                     "Content-Type: application/octet-stream"]
            if i == 0 and head_bytes is not None:
                base = len("\r\n".join(lines)) + 2 + len("X-Pad: ")
                lines.insert(1, "X-Pad: " + "p" * (head_bytes - base))
                assert len("\r\n".join(lines)) == head_bytes
            out += (f"--{boundary}\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode() + \
                f"part {i}\n".encode() + b"\r\n"
        out += f"--{boundary}--\r\n".encode()
        return http_request(ctx.envd, "POST", "/files", out,
                            envd_headers(ctx, **{"Content-Type":
                                                 f"multipart/form-data; boundary={boundary}"}))
    return send


def big(port_of, path, length, headers_of):
    def send(ctx):
        return head_only(port_of(ctx), "POST", path, headers_of(ctx), length)
    return send


def info(ctx):
    st, body = ctx_get(ctx, f"/sandboxes/{ctx.sbx_id}")
    assert st == 200, (st, body)
    return body


def ctx_get(ctx, path):
    a = http_request(ctx.api, "GET", path, headers={"X-API-KEY": ctx.d.token})
    return a.status, a.json()


def connect_keeps(ctx):
    """connect with a timeout shorter than what is left: endAt does not move."""
    before = when(info(ctx)["endAt"])
    a = api("POST", "/sandboxes/{id}/connect", {"timeout": 10})(ctx)
    if a.status != 200:
        return a
    after = when(info(ctx)["endAt"])
    ctx.note = (before, after)
    return a


CONNECTS = 20  # the clamp once raced a second clock reading (issue 31): each try is a chance


def connect_caps(ctx):
    """connect for longer than the lifetime left, CONNECTS times: each is 200 (clamped)."""
    a = None
    for _ in range(CONNECTS):
        a = api("POST", "/sandboxes/{id}/connect", {"timeout": 86400})(ctx)
        if a.status != 200:
            return a
    return a


def lifetime_held(ctx, a):
    i = info(ctx)
    life = when(i["endAt"]) - when(i["startedAt"])
    return None if life <= ctx.lifetime_s + 1 else f"endAt is {life:.1f} s after startedAt"


def v1_default(ctx):
    """A v1 create without timeout: its endAt is 15 s after its start. Killed at once."""
    a = api("POST", "/sandboxes", {"templateID": "base"})(ctx)
    if a.status == 201:
        sid = a.json()["sandboxID"]
        st, body = ctx_get(ctx, f"/sandboxes/{sid}")
        ctx.note = when(body["endAt"]) - when(body["startedAt"]) if st == 200 else None
        http_request(ctx.api, "DELETE", f"/sandboxes/{sid}", headers={"X-API-KEY": ctx.d.token})
    return a


def listdir_entries(ctx, a):
    n = len((a.json() or {}).get("entries", []))
    return None if n == 4096 else f"{n} entries, promised at most 4096 (4097 are there)"


def contexts_upto(n):
    """Makes code contexts until the sandbox has n; answers the last create."""
    def send(ctx):
        a = None
        while ctx.contexts < n:
            a = code("POST", "/contexts", {"cwd": "/home/user"})(ctx)
            if a.status != 201:
                return a
            ctx.contexts += 1
        return a
    return send


ROWS = [
    # ---- control plane, no guest
    Row("no X-API-KEY: 401", S("`X-API-KEY`; errors `{\"code\": <status>, \"message\"}`"),
        api("GET", "/v2/sandboxes", key=False), 401, 401),
    Row("list limit=0: 400", S("`limit` (1..100)"),
        api("GET", "/v2/sandboxes?limit=0"), 400, 400),
    Row("list limit=101: 400", S("`limit` (1..100)"),
        api("GET", "/v2/sandboxes?limit=101"), 400, 400),
    Row("list limit=100: 200", S("`limit` (1..100)"), api("GET", "/v2/sandboxes?limit=100"), 200),
    Row("a control-plane body of 1 MiB + 1: 413 from the head",
        S("| control-plane body | 1 MiB (`E2B_API_MAX_BODY_BYTES`) |"),
        big(lambda c: c.api, "/v2/sandboxes", MIB + 1,
            lambda c: {"X-API-KEY": c.d.token, "Content-Type": "application/json"}), 413),
    Row("create with 65 metadata pairs: 400", S("`metadata` (≤ 64 pairs)"),
        api("POST", "/v2/sandboxes", {"templateID": "base",
                                      "metadata": {f"k{i}": "v" for i in range(65)}}), 400, 400),
    Row("create with autoPause: 400", S("Create refuses `autoPause`/`autoResume` (400)"),
        api("POST", "/v2/sandboxes", {"templateID": "base", "autoPause": True}), 400, 400),
    Row("create of an unknown template: 400 naming it",
        S("Anything else is\n  400 naming the template"),
        api("POST", "/v2/sandboxes", {"templateID": "no-such-template"}), 400, 400,
        "no-such-template"),
    Row("a control-plane body nesting 33 levels: 400",
        S("≤ 32 levels in any body or message (`HTTP_JSON_MAX_DEPTH`), checked before parsing"),
        lambda ctx: http_request(ctx.api, "POST", "/v2/sandboxes",
                                 b'{"templateID": "base", "metadata": ' + b"[" * 32 + b"]" * 32 +
                                 b"}", {"X-API-KEY": ctx.d.token,
                                        "Content-Type": "application/json"}), 400, 400),
    Row("create with a metadata key of 257 bytes: 400",
        S("| metadata | ≤ 64 pairs, keys ≤ 256, values ≤ 4096 bytes |"),
        api("POST", "/v2/sandboxes", {"templateID": "base", "metadata": {"k" * 257: "v"}}),
        400, 400),
    Row("create with a metadata value of 4097 bytes: 400",
        S("| metadata | ≤ 64 pairs, keys ≤ 256, values ≤ 4096 bytes |"),
        api("POST", "/v2/sandboxes", {"templateID": "base", "metadata": {"k": "v" * 4097}}),
        400, 400),
    Row("create with 129 envVars: 400", S("| env | ≤ 128 variables"),
        api("POST", "/v2/sandboxes", {"templateID": "base",
                                      "envVars": {f"V{i}": "v" for i in range(129)}}), 400, 400),
    Row("connect to an unknown sandbox: 404", S("404 for an unknown or ended sandbox"),
        api("POST", "/sandboxes/" + "b" * 26 + "/connect", {"timeout": 10}), 404, 404),
    Row("kill of an unknown sandbox: 404 {\"code\":404}", S("404 `{\"code\":404}` → `false`"),
        api("DELETE", "/sandboxes/" + "b" * 26), 404, 404),
    Row("envd for an unknown sandbox: 502",
        S("Unknown, killed and timed-out sandboxes answer **502** on every envd path"),
        lambda ctx: http_request(ctx.envd, "GET", "/health",
                                 headers={"E2b-Sandbox-Id": "b" * 26}), 502),
    Row("pause of an unknown sandbox: 404 before 501",
        S("the sandbox is looked up first, as E2B's API does: **404** for an unknown one"),
        api("POST", "/sandboxes/" + "b" * 26 + "/pause"), 404, 404),
]

# On ctx.sbx (a running sandbox of the default tenant, timeout 300 s at create).
SANDBOX_ROWS = [
    Row("pause of a running sandbox: 501", S("then **501** with a message: not supported"),
        api("POST", "/sandboxes/{id}/pause"), 501, 501),
    Row("connect with a shorter timeout: 200, endAt unchanged", S("never shortens it"),
        connect_keeps, 200,
        check=lambda ctx, a: None if ctx.note[1] >= ctx.note[0] - 0.001 else
        f"endAt moved from {ctx.note[0]} to {ctx.note[1]}"),
    Row(f"connect for 24 h, {CONNECTS} times: 200, never past the admitted lifetime",
        S("never past the admitted lifetime"), connect_caps, 200, check=lifetime_held),
    Row("setTimeout beyond the lifetime: 400",
        S("400 beyond the lifetime admitted at create"),
        lambda ctx: api("POST", "/sandboxes/{id}/timeout", {"timeout": ctx.lifetime_s + 1})(ctx),
        400, 400),
    Row("setTimeout within it: 204", S("| `sbx.setTimeout(ms)` | `POST /sandboxes/{id}/timeout` | "
                                       "204"),
        api("POST", "/sandboxes/{id}/timeout", {"timeout": 300}), 204),
    Row("v1 create without timeout: 201 with a 15 s lifetime", S("(default 300 s; v1 15 s)"),
        v1_default, 201,
        check=lambda ctx, a: None if ctx.note is not None and abs(ctx.note - 15) < 0.5 else
        f"endAt - startedAt = {ctx.note}"),
    # ---- envd
    Row("an upload of 64 parts: 200", S("≤ 64 parts"), multipart(64), 200),
    Row("an upload of 65 parts: 400", S("≤ 64 parts"), multipart(65), 400),
    Row("a part header block of 8 KiB: 200", S("part headers ≤ 8 KiB"),
        multipart(1, head_bytes=8192), 200),
    Row("a part header block of 8 KiB + 1: 400", S("part headers ≤ 8 KiB"),
        multipart(1, head_bytes=8193), 400),
    Row("an envd body of 64 MiB + 1: 413 from the head",
        S("| envd body (uploads) | 64 MiB (`E2B_ENVD_MAX_BODY_BYTES`)"),
        big(lambda c: c.envd, "/files?path=big.bin", 64 * MIB + 1,
            lambda c: envd_headers(c, **{"Content-Type": "application/octet-stream"})), 413),
    Row("ListDir depth 17: 400 invalid_argument", S("depth 1..16, at most 4096 entries"),
        rpc("/filesystem.Filesystem/ListDir", {"path": "/home/user", "depth": 17}), 400,
        "invalid_argument", "depth"),
    Row("ListDir depth 16: 200", S("depth 1..16, at most 4096 entries"),
        rpc("/filesystem.Filesystem/ListDir", {"path": "/home/user", "depth": 16}), 200),
    Row("ListDir of 4097 files: 4096 entries", S("depth 1..16, at most 4096 entries"),
        rpc("/filesystem.Filesystem/ListDir", {"path": "/home/user/many", "depth": 1}), 200,
        check=listdir_entries),
    Row("files.read() of a missing file: 404", S("404 → `FileNotFoundError`, 400 for a directory"),
        lambda ctx: http_request(ctx.envd, "GET", "/files?path=no-such-file.txt",
                                 headers=envd_headers(ctx)), 404),
    Row("files.read() of a directory: 400", S("404 → `FileNotFoundError`, 400 for a directory"),
        lambda ctx: http_request(ctx.envd, "GET", "/files?path=many",
                                 headers=envd_headers(ctx)), 400),
    # ---- code interpreter
    Row("an /execute body of 12 MiB + 1: 413 from the head",
        S("an `/execute` body over 12 MiB (`E2B_CODE_MAX_BODY_BYTES`) is refused\n  from its "
          "Content-Length before it is read"),
        big(lambda c: c.envd, "/execute", 12 * MIB + 1,
            lambda c: envd_headers(c, **{"E2b-Sandbox-Port": "49999",
                                         "Content-Type": "application/json"})), 413),
    Row("/execute with code of 1 MiB + 1: 400", S("`code` ≤ 1 MiB of UTF-8 without NUL"),
        code("POST", "/execute", {"code": "#" * (MIB + 1)}), 400),
    Row("/execute with an unknown key: 400 naming it",
        S("exactly the keys the SDK sends (an unknown key is 400\n  naming it)"),
        code("POST", "/execute", {"code": "1", "colour": "red"}), 400, message="colour"),
    Row("/execute in language r: 400 naming the languages served",
        S("`typescript`/`ts`, `r` and `java` are **400** naming the languages served"),
        code("POST", "/execute", {"code": "1", "language": "r"}), 400,
        message="python, javascript (or js) and bash"),
    Row("context id 01: 404", S("no sign,\n  no leading zero); anything else is 404"),
        code("POST", "/contexts/01/restart"), 404),
    Row("context id 4294967296: 404", S("(`\"1\"`..`\"4294967295\"`"),
        code("POST", "/contexts/4294967296/restart"), 404),
    Row("8 contexts: 201", S("At most 8 contexts per sandbox"), contexts_upto(8), 201),
    Row("a 9th context: 429", S("At most 8 contexts per sandbox"),
        code("POST", "/contexts", {"cwd": "/home/user"}), 429),
]


class Ctx:
    def __init__(self, d, api_port, envd_port, lifetime_s=3600):
        self.d, self.api, self.envd = d, api_port, envd_port
        self.lifetime_s = lifetime_s
        self.sbx = None
        self.sbx_id = "a" * 26  # until the sandbox is made
        self.note = None
        self.contexts = 0

    def names(self):
        return {}


def start_sandbox(ctx):
    a = api("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 300})(ctx)
    assert a.status == 201, a
    ctx.sbx = a.json()
    ctx.sbx_id = ctx.sbx["sandboxID"]


def prepare_sandbox(ctx):
    """4097 files in /home/user/many for the ListDir row (through the native API: the sandbox
    is the session ses_<id>)."""
    d, sid = ctx.d, "ses_" + ctx.sbx_id
    ex = d.post(f"/v1/sessions/{sid}/exec",
                {"argv": ["sh", "-c", "mkdir many && cd many && i=0 && "
                          "while [ $i -lt 4097 ]; do : > f$i; i=$((i+1)); done"]})["exec_id"]
    for ev in d.events(sid, follow=True):
        if ev["type"] in ("exec.exited", "exec.failed") and ev.get("exec_id") == ex:
            assert ev.get("exit_code") == 0, ev
            return
